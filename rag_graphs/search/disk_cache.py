"""The persistent half of the cross-question search cache: rankings in a SQLite file.

The process's LRU (``rag_graphs.search.cache``) dies with the process and keys on the collection's
in-process generation, which another process's ingest never bumps. Entries here outlive the
process, so they key on the collection's ``fingerprint`` instead (row count plus a version
marker that every add and delete writes into the collection's properties, see
``rag_graphs.store.index``): an ingest or delete in any process makes the old entries unreachable.
A file that is not this cache (corrupt, or another program's database) is refused with an
error naming the setting, never silently used or overwritten.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from langchain_core.documents import Document

from rag_graphs.config.specs import SearchCacheFileError
from rag_graphs.search.cache import Ranking, hit_stats

SETTING = "RagContext.search_cache_path"
WHERE_SET = "--search-cache-path, RAG_GRAPHS_SEARCH_CACHE_PATH"
MAX_ROWS = 100_000
"""Entries kept; the least recently used go first."""
_SCHEMA = "CREATE TABLE IF NOT EXISTS rag_graphs_search (key TEXT PRIMARY KEY, ranking TEXT NOT NULL, "
_SCHEMA += "cost REAL NOT NULL, used REAL NOT NULL)"


def disk_key(*parts: object) -> str:
    """A stable key (the same in every process) for the parts that decide a search's hits."""
    return hashlib.sha256(json.dumps([str(p) for p in parts]).encode()).hexdigest()


def _dump(ranking: Ranking) -> str:
    return json.dumps(
        [{"id": d.id, "text": d.page_content, "meta": d.metadata, "score": s} for d, s in ranking],
        default=str,
    )


def _load(text: str) -> Ranking:
    return [
        (Document(id=r["id"], page_content=r["text"], metadata=r["meta"]), float(r["score"]))
        for r in json.loads(text)
    ]


class DiskCache:
    """Rankings by ``disk_key``, in one SQLite file shared by every process that names it.

    Counts its own hits and misses and the seconds its hits saved (what the search cost when
    it was stored).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self.hits = self.misses = 0
        self.saved_seconds = 0.0
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(_SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(rag_graphs_search)")}
            if columns != {"key", "ranking", "cost", "used"}:
                raise sqlite3.DatabaseError(f"table rag_graphs_search has columns {sorted(columns)}")
            self._db.commit()
        except (sqlite3.Error, OSError) as exc:
            raise SearchCacheFileError(self._unusable(exc)) from exc

    def _unusable(self, exc: BaseException) -> str:
        return (
            f"{SETTING}={str(self.path)!r} ({WHERE_SET}): not a usable search cache file ({exc}); "
            "it only holds cached searches: delete it or choose another path"
        )

    @contextmanager
    def _using(self) -> Iterator[None]:
        """Hold the lock; a file damaged after it was opened (``database disk image is
        malformed``) fails naming the file and the setting, not as a bare SQLite error."""
        with self._lock:
            try:
                yield
            except sqlite3.DatabaseError as exc:
                raise SearchCacheFileError(self._unusable(exc)) from exc

    def get_many(self, keys: list[str]) -> dict[str, tuple[Ranking, float]]:
        """The stored rankings (and what each cost) of the keys that have one."""
        found: dict[str, tuple[Ranking, float]] = {}
        with self._using():
            for key in keys:
                row = self._db.execute(
                    "SELECT ranking, cost FROM rag_graphs_search WHERE key = ?", (key,)
                ).fetchone()
                if row is None:
                    continue
                try:
                    found[key] = (_load(row[0]), float(row[1]))
                except (ValueError, KeyError, TypeError):  # a damaged entry is a miss, written again
                    continue
            if found:
                now = time.time()
                self._db.executemany(
                    "UPDATE rag_graphs_search SET used = ? WHERE key = ?", [(now, k) for k in found]
                )
                self._db.commit()
            self.hits += len(found)
            self.misses += len(set(keys) - set(found))
            self.saved_seconds += sum(cost for _, cost in found.values())
        return found

    def put_many(self, entries: dict[str, Ranking], cost: float) -> None:
        """Store rankings (each search cost ``cost`` seconds); the oldest beyond ``MAX_ROWS`` go."""
        now = time.time()
        with self._using():
            self._db.executemany(
                "INSERT OR REPLACE INTO rag_graphs_search VALUES (?, ?, ?, ?)",
                [(k, _dump(r), cost, now) for k, r in entries.items()],
            )
            self._db.execute(
                "DELETE FROM rag_graphs_search WHERE key IN (SELECT key FROM rag_graphs_search "
                "ORDER BY used DESC LIMIT -1 OFFSET ?)",
                (MAX_ROWS,),
            )
            self._db.commit()

    def stats(self) -> dict[str, float]:
        """Hits, misses, hit rate and seconds saved by this process's use of the file."""
        return hit_stats(self.hits, self.misses, self.saved_seconds)


_OPEN: dict[str, DiskCache] = {}
_OPEN_LOCK = threading.Lock()


def disk_cache(path: str) -> DiskCache:
    """The persistent cache at ``path``, opened once per process."""
    key = str(Path(path).expanduser().resolve())
    with _OPEN_LOCK:
        if key not in _OPEN:
            _OPEN[key] = DiskCache(path)
        return _OPEN[key]
