"""The cross-question search cache as one wrapper around any searcher (``CachedSearcher``).

The same query, on the same store state, with the same filter and ``k``, is searched once:
evaluations and notebooks ask many questions whose first search is the question itself, and
reruns ask them again. The key is the searcher's own key (store, collection, embedding model,
mode, unit, graph options), the store's state read at call time (``Searcher.state``: the
collection's row count and the version marker every write of any process stores with it), the
filter, ``k`` and the query normalised. So a delete, a relabel or a graph build by this process
or another one, or another tenant's filter, never gets a ranking it should not. Hits come from
the process's LRU (``rag_graphs.search.cache``, ``RagContext.search_cache`` entries) or, on its
misses, from the persistent file (``rag_graphs.search.disk_cache``, ``RagContext.search_cache_path``);
each carries ``metadata["cached"] = True``, and the retrieve step says "search cache hit".
"""

from __future__ import annotations

import math
import time
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from langchain_core.documents import Document

from rag_graphs.config.errors import SetupError
from rag_graphs.search.cache import SEARCHES, normalise
from rag_graphs.search.disk_cache import disk_cache, disk_key
from rag_graphs.search.searchers import Ranking, Searcher
from rag_graphs.store import ChunkIndex
from rag_graphs.store.checks import check_collection_exists


@dataclass(frozen=True)
class CachedSearcher:
    """``inner``'s rankings through the process cache (``size`` entries; 0: off) and the
    persistent one at ``path`` (None: off). A searcher without a key (the user's own retriever)
    is never cached."""

    inner: Searcher
    size: int = 0
    path: str | None = None

    @property
    def key(self) -> Hashable:
        return self.inner.key

    def state(self) -> Hashable:
        return self.inner.state()

    def search(
        self, queries: list[str], *, k: int, expr: str | None, state: Hashable | None = None
    ) -> list[Ranking]:
        if self.inner.key is None or not (self.size or self.path):
            return self.inner.search(queries, k=k, expr=expr, state=state)
        if self.size != SEARCHES.size:
            SEARCHES.resize(self.size)
        if state is None:  # read now: a write by any process since the last search shows here
            state = self.inner.state()
        keys: list[Hashable] = [(self.inner.key, state, expr, k, normalise(q)) for q in queries]
        from_disk: set[int] = set()

        def run(positions: list[int]) -> list[Ranking]:
            if not self.path:  # the state just read, handed on (graph search's row cache keys on it)
                return self.inner.search([queries[i] for i in positions], k=k, expr=expr, state=state)
            disk = disk_cache(self.path)
            dkeys = {i: disk_key(*keys[i]) for i in positions}  # type: ignore[misc]
            stored = disk.get_many(list(dkeys.values()))
            from_disk.update(i for i in positions if dkeys[i] in stored)
            todo = [i for i in positions if i not in from_disk]
            start = time.perf_counter()
            fresh = self.inner.search([queries[i] for i in todo], k=k, expr=expr, state=state) if todo else []
            if todo:
                cost = (time.perf_counter() - start) / len(todo)
                disk.put_many({dkeys[i]: r for i, r in zip(todo, fresh, strict=True)}, cost)
            by_position = dict(zip(todo, fresh, strict=True))
            return [stored[dkeys[i]][0] if i in from_disk else by_position[i] for i in positions]

        rankings, cached = SEARCHES.many(keys, run)  # each hit a fresh copy, this call's own
        for i, (ranking, hit) in enumerate(zip(rankings, cached, strict=True)):
            if hit or i in from_disk:
                for doc, _ in ranking:
                    doc.metadata["cached"] = True
        return rankings


@contextmanager
def missing_collection_named(index: ChunkIndex | None) -> Iterator[None]:
    """Searches run without asking the store first whether the collection exists (``begin``
    checked it once per run); a collection dropped since then fails the search, and this turns
    that failure into the ``SetupError`` naming the collection (any other error passes as is)."""
    try:
        yield
    except SetupError:
        raise
    except Exception:
        if index is not None:
            check_collection_exists(index)
        raise


def scored(doc: Document, score: float) -> Document:
    """``doc`` (a copy this caller owns) with its score in ``metadata["score"]``, in place (a hit
    without a score, ``NaN``, keeps none)."""
    if not math.isnan(score):
        doc.metadata["score"] = score
    return doc
