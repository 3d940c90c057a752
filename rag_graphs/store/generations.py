"""How many times this process changed (or reopened) each collection: search caches key on it."""

from __future__ import annotations

import threading
from pathlib import Path

from rag_graphs.store.lite import is_local

_GENERATIONS: dict[tuple[str, str], int] = {}
_GENERATIONS_LOCK = threading.Lock()


def _store_key(uri: str, collection: str) -> tuple[str, str]:
    return (str(Path(uri).expanduser().resolve()) if is_local(uri) else uri, collection)


def generation(uri: str, collection: str) -> int:
    """How many times this process changed (or reopened) the collection: a search cache keys on
    it, so an ingest or delete through any ``ChunkIndex`` on the same store invalidates it."""
    return _GENERATIONS.get(_store_key(uri, collection), 0)


def bump_generation(uri: str, collection: str) -> None:
    """Count one change of the collection (a write, a graph build, a reopened client)."""
    key = _store_key(uri, collection)
    with _GENERATIONS_LOCK:
        _GENERATIONS[key] = _GENERATIONS.get(key, 0) + 1
