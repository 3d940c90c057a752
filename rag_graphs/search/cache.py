"""The process's bounded LRU of search rankings (``SearchCache``, sized by
``RagContext.search_cache``; 0 turns it off), the ``Ranking`` type every searcher returns, and the
one normal form of a query (``normalise``).

What a key holds, so that a changed collection, another filter or another tenant never gets a
ranking it should not, is ``rag_graphs.search.cached``'s job (``CachedSearcher``, which wraps every
searcher, graph search included, and falls back to the persistent ``disk_cache`` on a miss).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from langchain_core.documents import Document

Ranking = list[tuple[Document, float]]


def normalise(query: str) -> str:
    """The one form of "the same query": case, runs of whitespace and closing punctuation do not
    change what a search means (the cache keys on it; loops detect a repeated query by it)."""
    return " ".join(query.lower().split()).strip(" ?.!")


@dataclass
class SearchCache:
    """A thread-safe LRU of rankings; counts hits, misses and the seconds the hits saved
    (each hit saves what its search cost when it was a miss)."""

    size: int = 1024
    hits: int = 0
    misses: int = 0
    saved_seconds: float = 0.0
    _entries: OrderedDict[Hashable, tuple[Ranking, float]] = field(default_factory=OrderedDict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def resize(self, size: int) -> None:
        """Keep at most ``size`` entries (the least recently used go first)."""
        with self._lock:
            self.size = size
            while len(self._entries) > size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry and reset the counters."""
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0
            self.saved_seconds = 0.0

    def stats(self) -> dict[str, float]:
        """Hits, misses, hit rate and seconds saved since the last ``clear``."""
        return hit_stats(self.hits, self.misses, self.saved_seconds)

    def many(
        self, keys: list[Hashable], search: Callable[[list[int]], list[Ranking]]
    ) -> tuple[list[Ranking], list[bool]]:
        """One ranking per key, and whether each came from the cache. ``search`` gets the
        positions of the misses and returns their rankings (one batch for all misses)."""
        found: list[Ranking | None] = [None] * len(keys)
        with self._lock:
            for i, key in enumerate(keys):
                if self.size and key in self._entries:
                    ranking, cost = self._entries[key]
                    self._entries.move_to_end(key)
                    found[i] = ranking
                    self.hits += 1
                    self.saved_seconds += cost
        missing = [i for i, r in enumerate(found) if r is None]
        if missing:
            start = time.perf_counter()
            fresh = search(missing)
            cost = (time.perf_counter() - start) / len(missing)
            with self._lock:
                self.misses += len(missing)
                for i, ranking in zip(missing, fresh, strict=True):
                    found[i] = ranking
                    if self.size:
                        self._entries[keys[i]] = (ranking, cost)
                        self._entries.move_to_end(keys[i])
                while len(self._entries) > self.size:
                    self._entries.popitem(last=False)
        searched = set(missing)
        cached = [i not in searched for i in range(len(keys))]
        return [_copied(r) for r in found if r is not None], cached


def hit_stats(hits: int, misses: int, saved_seconds: float) -> dict[str, float]:
    """A cache's counters as one report (the process LRU and the persistent file report alike)."""
    asked = hits + misses
    return {
        "hits": hits,
        "misses": misses,
        "hit_rate": hits / asked if asked else 0.0,
        "saved_seconds": saved_seconds,
    }


def _copied(ranking: Ranking) -> Ranking:
    """Fresh documents, so a caller that edits metadata cannot change the cached ranking."""
    return [
        (Document(id=d.id, page_content=d.page_content, metadata=dict(d.metadata)), s) for d, s in ranking
    ]


SEARCHES = SearchCache()
"""The process's search cache (``RagContext.search_cache`` sets its size)."""
