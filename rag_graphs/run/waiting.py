"""A run that stops for a person (``RagContext.interrupts``): how ``rag_graphs.run`` sees that a
thread waits, reports it (``Waiting``, then ``Finished`` with the payloads as ``interrupts``), and
continues it with the person's answer (LangGraph's ``Command(resume=...)``).

LangGraph stops a run at ``interrupt()`` and keeps it on the thread's checkpoints; a run in a
subgraph (``auto``'s routed method) stops the same way, and its parent's state lists the payload.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rag_graphs.config.context import RagContext
from rag_graphs.run.events import Finished, RunEvent, Waiting

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

INTERRUPTED = "__interrupt__"
"""The key LangGraph's ``values`` stream puts a stopped run's interrupts under."""


class _NoAnswer:
    def __repr__(self) -> str:
        return "NO_ANSWER"


NO_ANSWER: Any = _NoAnswer()
"""``resume`` left out: a waiting thread shows what it asks again and runs nothing."""


def check_thread(ctx: RagContext, thread_id: str | None, resume: Any) -> None:
    """Refuse a run that could stop for a person with no thread to continue on, or an answer
    without a thread to give it to (a ``ValueError`` naming what to pass)."""
    if thread_id is None and ctx.interrupts:
        asked = ",".join(sorted(ctx.interrupts))
        raise ValueError(
            f"RagContext.interrupts={asked!r} stops the run for a person's answer: pass thread_id=... "
            "(rag-graphs ask --thread-id) so it can be resumed, or leave interrupts empty"
        )
    if thread_id is None and resume is not NO_ANSWER:
        raise ValueError("resume=... answers a run waiting on a thread: pass its thread_id")


def pending(state: StateSnapshot | None) -> tuple[dict[str, Any], ...]:
    """The payloads a checkpointed run waits on (its own and its subgraphs'), in order."""
    if state is None:
        return ()
    return tuple(_payload(i.value) for i in state.interrupts)


def _payload(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {"kind": "unknown", "value": value}


def resume_input(thread_id: str, state: StateSnapshot | None, answer: Any) -> Any:
    """The graph input continuing a waiting thread with ``answer``.

    Raises:
        ValueError: the thread waits for no answer (never run, finished, or stopped elsewhere).
    """
    from langgraph.types import Command

    if not pending(state):
        raise ValueError(
            f"thread {thread_id!r} waits for no answer: run it without resume=... "
            "(rag-graphs ask without --resume)"
        )
    return Command(resume=answer)


def waiting(thread_id: str, payloads: tuple[dict[str, Any], ...], values: dict[str, Any]) -> list[RunEvent]:
    """``Waiting``, then ``Finished`` with the run so far and the payloads as ``interrupts``."""
    return [Waiting(thread_id, payloads), Finished({**values, "interrupts": list(payloads)})]


def ending(thread_id: str | None, result: dict[str, Any]) -> list[RunEvent]:
    """The events that end a stream whose last state is ``result``: ``waiting`` when it stopped
    at an interrupt, else ``Finished``."""
    stops = result.get(INTERRUPTED)
    if not stops or thread_id is None:
        return [Finished(result)]
    values = {k: v for k, v in result.items() if k != INTERRUPTED}
    return waiting(thread_id, tuple(_payload(i.value) for i in stops), values)
