"""Where a run checkpoints: a SQLite file for a thread, memory for a run that stops before its
answer without one, nowhere otherwise (``rag_graphs.run``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Protocol

from rag_graphs.config.threads import checkpoint_file, damaged_as_error, thread_lock


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
    """A SQLite checkpointer on ``run.checkpoints`` for a thread; else ``memory_saver``."""
    if run.thread_id is None:
        yield memory_saver(run)
        return
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = checkpoint_file(run.checkpoints)
    with thread_lock(path, run.thread_id), damaged_as_error(path):
        with SqliteSaver.from_conn_string(path) as checkpointer:
            yield checkpointer


@contextlib.asynccontextmanager
async def asaver(run: _Run) -> AsyncIterator[Any]:
    """``saver`` for async runs (an async checkpointer: the sync one refuses ``astream``)."""
    if run.thread_id is None:
        yield memory_saver(run)
        return
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path = checkpoint_file(run.checkpoints)
    with thread_lock(path, run.thread_id), damaged_as_error(path):
        async with AsyncSqliteSaver.from_conn_string(path) as checkpointer:
            yield checkpointer
