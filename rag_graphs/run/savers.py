"""Where a run checkpoints: its thread's checkpointer (a SQLite file or a PostgreSQL URI,
``rag_graphs.run.checkpointers``), memory for a run that stops before its answer without a thread,
nowhere otherwise (``rag_graphs.run``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Protocol


class _Run(Protocol):
    """What a saver reads of a run (``rag_graphs.run._Run``)."""

    thread_id: str | None
    checkpoints: str | Path

    @property
    def checkpoint_thread(self) -> str | None: ...


def memory_saver(run: _Run) -> Any:
    """The in-memory checkpointer of a run that stops before its answer without a thread
    (LangGraph's interrupts need one); None when the run checkpoints nothing."""
    if run.checkpoint_thread is None:
        return None
    from langgraph.checkpoint.memory import InMemorySaver

    return InMemorySaver()


@contextlib.contextmanager
def saver(run: _Run) -> Iterator[Any]:
    """The thread's checkpointer on ``run.checkpoints`` (``checkpointers.thread_saver``: SQLite or
    PostgreSQL, the thread locked); else ``memory_saver``."""
    if run.thread_id is None:
        yield memory_saver(run)
        return
    from rag_graphs.run.checkpointers import thread_saver

    with thread_saver(run.checkpoints, run.thread_id) as checkpointer:
        yield checkpointer


@contextlib.asynccontextmanager
async def asaver(run: _Run) -> AsyncIterator[Any]:
    """``saver`` for async runs (an async checkpointer: the sync one refuses ``astream``)."""
    if run.thread_id is None:
        yield memory_saver(run)
        return
    from rag_graphs.run.checkpointers import athread_saver

    async with athread_saver(run.checkpoints, run.thread_id) as checkpointer:
        yield checkpointer
