"""The one rule that stops every loop: enough, a spent budget, or a repeated query.

Every looping method (iterative, IRCoT, Self-RAG, CRAG, IterDRAG, ReAct) asks
``loop_stop`` after each turn and writes the answer (``stop_update``) into two fields:
``stop_kind``, typed, which routers read, and ``stop_reason``, the human-readable text the
output carries. No router compares the text. Budgets are named for what they count:
``max_hops`` retrieval rounds (``state["hops"]``), ``max_steps`` agent turns,
``iterdrag_iterations`` follow-ups. LangGraph's recursion limit is never the stop.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rag_graphs.search.cache import normalise
from rag_graphs.state import RagState, StopKind, searched

ENOUGH = "enough"
SINGLE_PASS = "single pass"  # the stop reason of methods without a loop


@dataclass(frozen=True)
class Stop:
    """Why a loop stops: ``kind`` for routers, ``reason`` for people (``stop_reason``)."""

    kind: StopKind
    reason: str

    def noted(self, extra: str) -> Stop:
        """The same stop with ``extra`` added to its reason."""
        return replace(self, reason=self.reason + extra)


STOP_ENOUGH = Stop("enough", ENOUGH)
STOP_SINGLE_PASS = Stop("single_pass", SINGLE_PASS)


def already_searched(state: RagState, query: str) -> bool:
    """True when ``query`` (normalised) was searched before in this run, or is the question
    itself and was searched."""
    return normalise(query) in {normalise(q) for q in searched(state)}


@dataclass(frozen=True)
class Budget:
    """How much of one budget a loop has used: ``used`` of ``limit`` ``unit``s."""

    used: int
    limit: int
    unit: str  # "hop" (retrieval rounds), "agent step", "follow-up"...

    @property
    def spent(self) -> bool:
        return self.used >= self.limit

    @property
    def stop(self) -> Stop:
        """Why a loop this budget stopped."""
        return Stop("budget", f"{self.unit} budget reached ({self.limit} {self.unit}s)")


def hop_budget(state: RagState, limit: int) -> Budget:
    """Retrieval rounds run against ``RagContext.max_hops``."""
    return Budget(state.get("hops", 0), limit, "hop")


def loop_stop(
    state: RagState,
    budget: Budget,
    *,
    done: bool = False,
    next_query: str | None = None,
    seen: list[str] | None = None,
) -> Stop | None:
    """Why the loop stops after this turn (None to go on).

    In order: ``done`` (the turn judged the gathered information enough); the
    latest retrieval was a skipped repeat; the budget is spent; the proposed
    ``next_query`` is empty or repeats a query already searched (or one of
    ``seen``, e.g. earlier follow-ups). Pass ``next_query=None`` for loops
    whose next turn is not a search of a model-written query.
    """
    if done:
        return STOP_ENOUGH
    if state.get("latest_repeated"):
        return Stop("repeated", "repeated query: the last search found nothing new")
    if budget.spent:
        return budget.stop
    if next_query is not None:
        if not next_query.strip():
            return Stop("no_query", "no next query proposed")
        earlier = {normalise(q) for q in [*searched(state), *(seen or [])]}
        if normalise(next_query) in earlier:
            return Stop("repeated", f"repeated query: {next_query}")
    return None


def stop_update(stop: Stop | None) -> dict:
    """The state update of a loop turn that asked ``loop_stop`` (None: go on): ``stop_kind``
    for the router and the answer node (``budget``: ``outcome`` is ``budget_exhausted``), and
    ``stop_reason`` for the output."""
    if stop is None:
        return {"stop_kind": None, "stop_reason": ""}
    return {"stop_kind": stop.kind, "stop_reason": stop.reason}
