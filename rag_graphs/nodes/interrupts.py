"""Where a person steps in: opt-in interrupts, each a LangGraph ``interrupt()`` with a
self-describing JSON payload, read back from the value the run is resumed with.

``RagContext.interrupts`` names the kinds a run asks about (none by default, and then no
node here asks anything):

- ``plan``: ``approve_plan``, a node of its own right after the node that writes the plan
  (``planned``, ``decomposition``) and before any fan-out. LangGraph runs an interrupted node
  again from its start when the run resumes, so the plan's model call is not in it, and no
  ``Send`` branch has started yet: each runs once, after the answer.
- ``web_search``: ``confirm_web`` before a web search (``crag``'s web branch, ``react``'s tool).
- ``clarify``: ``ask_back`` when ``auto``'s router is unsure of the question's kind.

A resume value that does not fit (a plan edit with an empty sub-question, ...) is asked for
again with the error in the payload, at most ``MAX_ASKS`` times in all; then the safe default
stands (the model's plan, no web search, the question as asked), and a step says so. Every
decision is a step of the run. A run stops where its context said when it began (the state's
``stops_for``, written by ``begin``), so a resume sent without the context (``Command(resume=...)``
alone, as a server client may send it) is still read, not dropped for the default.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from langgraph.runtime import Runtime

from rag_graphs.config.context import RagContext
from rag_graphs.config.fields import InterruptKind
from rag_graphs.config.runtime import get_context
from rag_graphs.nodes.events import step
from rag_graphs.nodes.fresh import check_question
from rag_graphs.state import RagState, Step

MAX_ASKS = 3
"""Interrupts one decision may take: a person (or client) answering badly is asked again, not forever."""
YES = frozenset({"approve", "approved", "yes", "y", "ok", "go on", "continue"})
NO = frozenset({"decline", "declined", "no", "n", "reject", "skip"})

Reader = Callable[[Any], tuple[Any, str]]
"""A resume value -> (the decision, "") or (None, why the value does not fit)."""


def asks(ctx: RagContext, kind: InterruptKind, stops_for: Iterable[str] = ()) -> bool:
    """True when the run stops for a person at ``kind``: its context says so, or it did when the
    run began (``stops_for``: the state's, kept for a resume sent without the context)."""
    return kind in ctx.interrupts or kind in stops_for


def _word(value: Any) -> str | None:
    """``value`` as a lower-case yes/no word, True/False as "approve"/"decline"; None otherwise."""
    if isinstance(value, bool):
        return "approve" if value else "decline"
    if isinstance(value, dict) and isinstance(value.get("approve"), bool):
        return "approve" if value["approve"] else "decline"
    return value.strip().lower() if isinstance(value, str) else None


def ask_until(payload: dict[str, Any], read: Reader, default: Any) -> tuple[Any, Any, str]:
    """Interrupt with ``payload`` until ``read`` accepts the resume value, at most ``MAX_ASKS``
    times; (decision, the last value, "") or (``default``, the last value, the last error).

    Each ask is its own ``interrupt()`` in the node: on resume LangGraph answers the earlier
    ones with the values already given, in order, and stops at the first unanswered one.
    """
    from langgraph.types import interrupt

    value, error = None, ""
    for _ in range(MAX_ASKS):
        value = interrupt(payload | ({"error": error} if error else {}))
        decision, error = read(value)
        if not error:
            return decision, value, ""
    return default, value, error


def _short(value: Any) -> str:
    return repr(value)[:200]


# -- plan ------------------------------------------------------------------------------------------

PLAN_HOW = (
    'resume with true or "approve" to search this plan; a list of sub-questions to search those '
    'instead (at most {cap}; "#1" names the first one\'s answer in planned paths); false or '
    '"reject" to search the question alone'
)


def read_plan(value: Any, cap: int) -> tuple[list[str] | None, str]:
    """A plan resume value -> (None: approved as it is | the plan to search, "") or (None, error)."""
    word = _word(value)
    if word in YES:
        return None, ""
    if word in NO:
        return [], ""
    if isinstance(value, dict) and "sub_questions" in value:
        value = value["sub_questions"]
    if not isinstance(value, list | tuple) or not value:
        return None, f"not an approval nor a list of sub-questions: {_short(value)}"
    if len(value) > cap:
        return None, f"{len(value)} sub-questions; at most {cap} (RagContext.num_queries)"
    plan = []
    for n, sub in enumerate(value, start=1):
        try:
            plan.append(check_question(sub).strip())
        except ValueError as exc:
            return None, f"sub-question {n}: {exc}"
    return plan, ""


def approve_plan(state: RagState, runtime: Runtime[RagContext]) -> dict[str, Any]:
    """Stop for the plan's approval when ``RagContext.interrupts`` has ``plan``; else pass on.

    The resume value approves (``True``, ``"approve"``), rejects (``False``, ``"reject"``: the
    question is searched alone) or replaces the plan (a list of sub-questions)."""
    ctx = get_context(runtime)
    if not asks(ctx, "plan", state.get("stops_for", ())):
        return {}
    plan = list(state.get("subqueries") or [])
    payload = {
        "kind": "plan",
        "question": state["question"],
        "sub_questions": plan,
        "how_to_resume": PLAN_HOW.format(cap=ctx.num_queries),
    }
    edited, value, error = ask_until(payload, lambda v: read_plan(v, ctx.num_queries), None)
    if error:
        text = f"kept the model's plan after {MAX_ASKS} unusable answers (last: {_short(value)}: {error})"
        return {"steps": [step("note", text=text)]}
    if edited is None:
        return {"steps": [step("decide", text="the plan was approved: " + "; ".join(plan))]}
    text = "the plan was rejected: searching the question alone"
    if edited:
        text = "the plan was edited: " + "; ".join(edited)
    return {"subqueries": edited, "steps": [step("decide", text=text)]}


# -- web search ------------------------------------------------------------------------------------

WEB_HOW = 'resume with true or "approve" to search the web; false or "decline" to go on without it'
DECLINED = "the web search was declined: going on without the web"


def read_yes_no(value: Any) -> tuple[bool | None, str]:
    """A yes/no resume value -> (True | False, "") or (None, error)."""
    word = _word(value)
    if word in YES or word in NO:
        return word in YES, ""
    return None, f"neither approve nor decline: {_short(value)}"


def confirm_web(
    ctx: RagContext, question: str, queries: list[str], stops_for: Iterable[str] = ()
) -> tuple[bool, list[Step]]:
    """(search the web?, the steps saying who decided) for a web search of ``queries``: always
    yes unless ``RagContext.interrupts`` has ``web_search``; then the person's answer, and no
    search after ``MAX_ASKS`` answers that fit neither."""
    if not asks(ctx, "web_search", stops_for):
        return True, []
    payload = {"kind": "web_search", "question": question, "queries": queries, "how_to_resume": WEB_HOW}
    yes, value, error = ask_until(payload, read_yes_no, False)
    said = "; ".join(queries)
    if error:
        return False, [step("note", text=f"no web search after {MAX_ASKS} unusable answers (last: {error})")]
    text = f"the web search was approved: {said}" if yes else f"{DECLINED} ({said})"
    return yes, [step("decide", text=text)]


# -- asking back -----------------------------------------------------------------------------------

CLARIFY_HOW = 'resume with the question put more clearly, or true / "go on" to keep it as it is'


def read_clarified(value: Any, question: str) -> tuple[str, str]:
    """A clarification -> (the question to answer, "") or ("", error)."""
    if _word(value) in YES or value is None:
        return question, ""
    try:
        return check_question(value).strip(), ""
    except ValueError as exc:
        return "", str(exc)


def ask_back(
    ctx: RagContext, question: str, seen: str, why: str, stops_for: Iterable[str] = ()
) -> tuple[str, list[Step]]:
    """(the question to answer, the steps) when the router saw kind ``seen`` and is unsure
    (``why``): the question as asked unless ``RagContext.interrupts`` has ``clarify``."""
    if not asks(ctx, "clarify", stops_for):
        return question, []
    payload = {
        "kind": "clarify",
        "question": question,
        "seen_kind": seen,
        "why": why,
        "how_to_resume": CLARIFY_HOW,
    }
    clarified, _, error = ask_until(payload, lambda v: read_clarified(v, question), question)
    if error:
        return question, [step("note", text=f"kept the question after {MAX_ASKS} unusable answers ({error})")]
    if clarified == question:
        return question, [step("decide", text="asked back; the question stands as asked")]
    return clarified, [step("decide", text=f"asked back; the question is now: {clarified}")]
