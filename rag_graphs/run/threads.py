"""A thread's runs: one at a time, and what makes its stored result the answer to a new call.

Two runs of one thread at once (two terminals, the same ``--thread-id``) would interleave their
checkpoints into one history that is neither run: the second is refused while the first runs.
The lock is ``flock`` on a small file per thread beside the SQLite checkpoints file
(``thread_lock``), so the kernel releases it when its holder exits, even by ``kill -9``: a killed
run never leaves its thread locked (PostgreSQL's threads take an advisory lock instead:
``rag_graphs.run.checkpointers``). A finished thread is replayed only for the same
``replay_key``.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from pathlib import Path

from rag_graphs.support.locks import exclusive


class ThreadBusy(RuntimeError):
    """Another run of the same thread holds its lock."""


@contextlib.contextmanager
def thread_lock(path: str, thread_id: str) -> Iterator[None]:
    """Hold ``thread_id``'s lock in the checkpoints file ``path`` for the block.

    Raises:
        ThreadBusy: another run (this process or another) holds it.
    """
    folder = Path(f"{path}.locks")
    folder.mkdir(parents=True, exist_ok=True)
    lock = folder / f"{hashlib.sha256(thread_id.encode()).hexdigest()[:32]}.lock"
    busy = ThreadBusy(
        f"thread {thread_id!r} is being run by another process right now (lock {lock}); "
        "wait for it to finish, then run again to get its result, or use another --thread-id"
    )
    with exclusive(lock, lambda: busy):
        yield


REPLAY_KEYS = ("rag_graphs_run", "rag_graphs_store_state")
"""Checkpoint metadata (flat strings: LangGraph keeps only those) naming what a run read: a finished
thread is replayed only for the same."""


def replay_key(method: str, question: str, ctx: object, store_state: str) -> dict[str, str]:
    """What makes a thread's stored result the answer to a new call: the method, the question, the
    store and collection, the access it was read under (tenant, tags, sources, filter) and the
    store's state (``store_state``: its row count and version marker), keyed as ``REPLAY_KEYS``.
    Another tenant, store, method, or a delete since, and the result is not served again (attack
    round 3: a thread replayed acme's passages to another tenant, and deleted text)."""
    fields = (
        "store_uri",
        "collection",
        "embeddings",
        "tenant",
        "tags",
        "sources",
        "search_filter",
        "search_mode",
    )
    values = [method, question, *(repr(getattr(ctx, name, None)) for name in fields)]
    own = getattr(ctx, "retriever", None)
    values.append(f"own:{id(own)}" if own is not None else "")  # a retriever of one process: never replayed
    digest = hashlib.sha256("\x1f".join(values).encode("utf-8")).hexdigest()[:32]
    return dict(zip(REPLAY_KEYS, (digest, store_state), strict=True))
