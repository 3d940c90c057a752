"""One write at a time to a store from this process, and the store's own write collisions retried.

Milvus Lite rewrites a collection's ``schema.json`` through one fixed temporary file
(``schema.json.tmp``) on every schema change: a collection property (the version marker every
write moves, a replace record, the embedding model's name), a new collection or index. Two changes
at once (two index requests served by one ``langgraph dev``) collide there: one fails with a raw
``MilvusException`` and, for a version marker, caches keyed on it serve stale results (attack
round 4, issue 50 item 13). So every write of this process to one store (inserts, deletes,
schema changes, on every collection of the store) holds that store's lock (``store_lock``: one
re-entrant lock per Milvus Lite path or server URI; only one process may open a Milvus Lite path).
A client of another process on the same store (a served ``python -m milvus_lite server``) can
still collide, so a schema change failing as such a collision is tried again a few times
(``schema_change``); one that still fails is one line naming the store and the change
(``StoreWriteError``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from rag_graphs.store.lite import is_local
from rag_graphs.support.redaction import redact_url

T = TypeVar("T")

_LOCKS: dict[str, threading.RLock] = {}
_LOCKS_LOCK = threading.Lock()
ATTEMPTS = 5
"""Tries of a schema change that collides with another client's (waits 0.05, 0.1, 0.2, 0.4 s)."""
_COLLISION = "schema.json"
"""What Milvus Lite's message names when two schema writes collided (``[Errno 2] No such file or
directory: '.../schema.json.tmp' -> '.../schema.json'``: its temporary file renamed under it)."""


class StoreWriteError(RuntimeError):
    """A write to the store failed after its retries (one line: the store, the change, why)."""


def store_lock(uri: str) -> threading.RLock:
    """The lock every write of this process to the store at ``uri`` holds (re-entrant: a write
    that moves the version marker holds it once more)."""
    key = str(Path(uri).expanduser().resolve()) if is_local(uri) else uri
    with _LOCKS_LOCK:
        return _LOCKS.setdefault(key, threading.RLock())


def collided(exc: BaseException) -> bool:
    """True when ``exc`` is Milvus Lite's failure of a schema write that met another one."""
    return _COLLISION in str(exc)


def schema_change(uri: str, what: str, change: Callable[[], T]) -> T:
    """Run ``change`` (a schema change of the store at ``uri``, ``what`` naming it) under the
    store's lock, again after a collision with another client's schema write.

    Raises:
        StoreWriteError: it still collided after ``ATTEMPTS`` tries (the cause chained).
    """
    with store_lock(uri):
        for attempt in range(ATTEMPTS):
            try:
                return change()
            except Exception as exc:
                if not collided(exc):
                    raise
                if attempt == ATTEMPTS - 1:
                    raise StoreWriteError(
                        f"the store {redact_url(uri)!r} could not write {what}: another client was "
                        f"changing the same collection's schema ({ATTEMPTS} tries; "
                        f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
                    ) from exc
                time.sleep(0.05 * 2**attempt)
    raise AssertionError("unreachable")  # pragma: no cover
