"""What a run yields as it goes (``rag_graphs.run.stream``): a thread picked up (``Resumed``), a node's
progress (``Progress``), a reasoning step the moment a node writes it (``StepEvent``), a stop for a
person's answer (``Waiting``), and last the result (``Finished``); and the one error a thread raises
(``ThreadConflict``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class ThreadConflict(ValueError):
    """A thread holds an unfinished run of another question (a ``ValueError``: bad input)."""


@dataclass(frozen=True)
class Resumed:
    """A checkpointed thread was picked up: it continues at ``next``, or finished before (``next`` empty)."""

    thread_id: str
    next: tuple[str, ...]

    @property
    def finished(self) -> bool:
        """True when the thread's run had ended: its stored result follows, nothing runs."""
        return not self.next


@dataclass(frozen=True)
class Progress:
    """A node's custom progress event (``retrieve start query=...``), as it happens."""

    node: str
    event: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StepEvent:
    """One reasoning step the moment a node writes it; ``number`` counts from 1 within this stream."""

    number: int
    step: dict[str, Any]


@dataclass(frozen=True)
class Waiting:
    """The run stopped for a person's answer (``RagContext.interrupts``): each of ``interrupts`` is a
    JSON payload naming its ``kind``, what is asked and ``how_to_resume``. The thread keeps the run:
    run it again with ``resume=<answer>`` (``rag_graphs.run``) to continue."""

    thread_id: str
    interrupts: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Finished:
    """The run's result: the answer contract, or the partial one of a failed run (with ``error``)."""

    result: dict[str, Any]

    @property
    def failed(self) -> bool:
        """True for the partial result of a run that ended at a failing node."""
        return bool(self.result.get("error"))

    @property
    def waiting(self) -> bool:
        """True for the partial result of a run waiting for a person (its ``interrupts`` say what)."""
        return bool(self.result.get("interrupts"))


RunEvent = Resumed | Progress | StepEvent | Waiting | Finished
"""What ``stream`` and ``astream`` yield; ``Finished`` always comes last."""
