"""The nearest entity names of a mention, searched in process over one store state's name vectors
(issue 47, round 7).

Why: linking searches the nearest entity names of a question's mentions that no entity key
matches (``linking.nearest_entities``; 11% of the 21k mixed store's questions). Milvus Lite 3.x
searches in Python over every stored row version of the entity collection (131,056 versions of
124,537 entities there: a dedup map and a per-row tombstone mask at every search, whatever the
limit or output fields), 145-485 ms a search under load: the p90 tail of graph search
(BENCHMARKS.md, "Graph search latency, round 6"). Held in process, the same search is one matrix
product over the live names' vectors.

**The read.** Reading the entity vectors through pymilvus costs 37 s and 3.8 GB at 124,537 rows
(Python float lists); read from Milvus Lite's own files (``store.lite_files``: each key's newest
live version with its name, then the vectors a page at a time into one float32 matrix) ~2 s.
Which rows: the state's entity copy (``entity_copy``: every live key and its name, read through
pymilvus for this same state) says which keys exist; a key's vector is its newest version in the
files, taken only if that version is not deleted by a delta file and has the name the copy has (a
name's vector is the name embedded when its row was first inserted: an update sets chunks and
counts only, ``build.add_entities``).
Any other key (still in Milvus Lite's memory table, or re-inserted under another name) is read by
key through pymilvus (at most ``MAX_READ_BY_KEY``). A manifest of another format, a file gone
meanwhile (a compaction), a key the store no longer has: no vectors for that state, Milvus
searches.

**In the background.** The read runs in a thread started by the first search of a state; until it
has finished, ``name_vectors`` returns None and linking searches Milvus as before. Only collections
of ``MIN_SEARCHED_ENTITIES`` to ``MAX_SEARCHED_ENTITIES`` names are read: a small one is searched
fast enough in Milvus (no test store pays a read), a very large one would hold too much.

**The search** (``NameVectors.nearest``) is exact cosine, top ``limit`` per mention at or above the
threshold, ties by row order, as ``nearest_entities`` asks Milvus (whose HNSW over flushed segments
is approximate: BENCHMARKS.md measures what exact changes). On a CPU with native bf16 units
(``store.embed_precision.native_bf16``) with torch already loaded, a bf16 matrix product (AMX: ~4x
faster than float32 at 124,537 x 384) picks the ``POOL`` best per mention and float32 rescores
them; a bf16 score is within ``BF16_ERROR`` of the float32 one for unit vectors, so when the pool's
``limit``-th float32 score beats the best score any name outside the pool can have (its bf16 floor
plus the error), or that bound is under the threshold, the pool's answer is the exact answer;
otherwise that mention is scored in float32 over every name.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_graphs.entity_graph.rows import ENTITY_ROW_FIELDS, NAME_FIELD, entity_rows, entity_table
from rag_graphs.store.fields import DENSE_FIELD
from rag_graphs.store.index import ChunkIndex
from rag_graphs.store.lite import is_local
from rag_graphs.store.lite_files import newest_versions, read_vectors, release_arrow_memory
from rag_graphs.store.torch_threads import one_thread

log = logging.getLogger(__name__)

MIN_SEARCHED_ENTITIES = 20_000
"""Entity names from which a state's vectors are read and searched in process. Below it Milvus
Lite's own search is cheap enough (it grows with the stored row versions: ~30 ms at 64,000
names, 145-485 ms at 124,537 in 131,056-188,255 versions under load), and small stores (every test
store) never pay a read."""
MAX_SEARCHED_ENTITIES = 250_000
"""Entity names up to which they are held (float32, 1.5 kB a name at 384 dimensions, plus bf16
where used: 287 MB at 124,537 names; so ~575 MB at the bound); a larger collection is searched in
Milvus."""
MAX_READ_BY_KEY = 20_000
"""Live keys whose vector the files do not hold that are read by key through pymilvus (rows not
yet flushed); more, and the state is searched in Milvus."""
POOL = 256
"""Names per mention the bf16 product keeps for the float32 rescoring."""
BF16_ERROR = 0.02
"""Bound on |bf16 score - float32 score| of two unit vectors: inputs rounded to 8 significant
bits (2 u + u^2 = 0.0079 over the sum of |x_i q_i| <= 1), the output rounded once more (0.0039),
float32 sums; 0.02 leaves room."""
HELD_STORES = 2
"""Collections whose name vectors a process keeps (the least recently searched go first)."""

NAME = ENTITY_ROW_FIELDS.index(NAME_FIELD)


@dataclass(frozen=True)
class NameVectors:
    """One store state's entity names as vectors: ``keys`` row by row, ``units`` (float32, scaled
    to length 1, a zero vector kept as is) and ``coarse`` (the same in bf16 as a torch tensor, or
    None: float32 only)."""

    state: Hashable
    keys: tuple[str, ...]
    units: np.ndarray
    coarse: Any = None

    def nearest(
        self, vectors: Sequence[Sequence[float]], limits: Sequence[int], threshold: float
    ) -> list[list[tuple[str, float]]]:
        """Per vector, its ``limits[i]`` nearest names by cosine at or above ``threshold``, best
        first (ties: the earlier row), as (key, similarity)."""
        if not len(vectors) or not self.keys:
            return [[] for _ in vectors]
        queries = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(queries, axis=1, keepdims=True)
        queries = np.asarray(queries / np.where(norms == 0, 1.0, norms), dtype=np.float32)
        coarse = self._coarse(queries) if self.coarse is not None and len(self.keys) > POOL else None
        found = []
        for i, limit in enumerate(limits):
            column = None if coarse is None else coarse[:, i]
            rows, scores = self._candidates(queries[i], limit, threshold, column)
            order = np.lexsort((rows, -scores))[: max(limit, 0)]
            found.append([(self.keys[rows[j]], float(scores[j])) for j in order if scores[j] >= threshold])
        return found

    def _coarse(self, queries: np.ndarray) -> np.ndarray:
        """bf16 scores of every name against every query (names x queries), as float32."""
        import torch

        with one_thread():
            product = self.coarse @ torch.from_numpy(np.ascontiguousarray(queries.T)).to(torch.bfloat16)
            return product.float().numpy()

    def _candidates(
        self, query: np.ndarray, limit: int, threshold: float, coarse: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows that hold the exact top ``limit`` above ``threshold``, with their float32 scores:
        the bf16 pool when it provably does, else every row."""
        if coarse is not None and 0 < limit <= POOL:
            pool = np.argpartition(-coarse, POOL - 1)[:POOL]
            scores = np.einsum("ij,j->i", self.units[pool], query)
            outside = float(coarse[pool].min()) + BF16_ERROR  # the best any other name can score
            if outside < threshold or float(np.sort(scores)[-limit]) > outside:
                return pool, scores
        # einsum's own loop, not BLAS (its threads spin on after a product: ``store.mirror``)
        return np.arange(len(self.keys)), np.einsum("ij,j->i", self.units, query)


_HELD: OrderedDict[tuple[str, str], tuple[Hashable, NameVectors | None]] = OrderedDict()
_READING: dict[tuple[str, str], tuple[Hashable, threading.Thread]] = {}
_LOCK = threading.Lock()


def name_vectors(index: ChunkIndex, state: Hashable, copy: dict[str, tuple] | None) -> NameVectors | None:
    """``index``'s entity name vectors for ``state`` when read; None while they are being read (a
    first call starts the read in a thread) or where none apply: not a Milvus Lite path, no entity
    copy (``entity_copy``, read for the same ``state``), fewer than ``MIN_SEARCHED_ENTITIES`` or
    more than ``MAX_SEARCHED_ENTITIES`` names, or a read that failed for this state."""
    if copy is None or not is_local(index.uri):
        return None
    if not MIN_SEARCHED_ENTITIES <= len(copy) <= MAX_SEARCHED_ENTITIES:
        return None
    where = (index.uri, index.collection)
    with _LOCK:
        held = _HELD.get(where)
        if held is not None and held[0] == state:
            _HELD.move_to_end(where)
            return held[1]
        _HELD.pop(where, None)  # another state's: no search of this state may use it, free it now
        reading = _READING.get(where)
        if reading is None or reading[0] != state:  # an older state's read ends unused
            thread = threading.Thread(
                target=_read_into, args=(index, state, copy, where), name="entity-name-vectors", daemon=True
            )
            _READING[where] = (state, thread)
            thread.start()
    return None


def wait_for_reads(timeout: float | None = None) -> None:
    """Wait for the reads running now to end (a benchmark's warm-up, tests)."""
    with _LOCK:
        threads = [thread for _, thread in _READING.values()]
    for thread in threads:
        thread.join(timeout)


def _read_into(index: ChunkIndex, state: Hashable, copy: dict[str, tuple], where: tuple[str, str]) -> None:
    found = None
    for attempt in (1, 2):  # a compaction may replace a file between the manifest and its read
        try:
            found = read_name_vectors(index, state, copy)
            break
        except Exception as exc:  # noqa: BLE001 (any failure: Milvus searches this state, as before)
            why = f"{type(exc).__name__}: {exc}"
            log.warning("collection %r: name vectors not read (try %d: %s)", index.collection, attempt, why)
    with _LOCK:
        if _READING.get(where, (None, None))[1] is not threading.current_thread():
            return  # a later state's read started meanwhile: this one is stale
        del _READING[where]
        _HELD[where] = (state, found)
        _HELD.move_to_end(where)
        while len(_HELD) > HELD_STORES:
            _HELD.popitem(last=False)


def read_name_vectors(index: ChunkIndex, state: Hashable, copy: dict[str, tuple]) -> NameVectors | None:
    """The vectors of the names in ``copy`` (key -> packed entity row, ``entity_copy``) from the
    entity collection's files, the rest by key; None when that cannot be done for this state."""
    start = time.perf_counter()
    table = entity_table(index)
    newest = newest_versions(index.uri, table.name, NAME_FIELD)
    if newest is None:
        return None
    keys = tuple(copy)
    planned: dict[int, tuple[list[int], list[int]]] = {}  # file -> (its rows, their rows in the matrix)
    by_key: list[int] = []
    for position, key in enumerate(keys):
        version = newest.live.get(key)
        if version is not None and version[2] == copy[key][NAME]:
            planned.setdefault(version[0], ([], []))
            planned[version[0]][0].append(version[1])
            planned[version[0]][1].append(position)
        else:
            by_key.append(position)
    if len(by_key) > MAX_READ_BY_KEY:
        log.info("collection %r: %d names not in its files: searched in Milvus", table.name, len(by_key))
        return None
    matrix: np.ndarray | None = None
    for number, (rows, positions) in planned.items():
        file = newest.files[number]
        matrix = read_vectors(file, DENSE_FIELD, np.asarray(rows), np.asarray(positions), len(keys), matrix)
    if by_key:
        read = entity_rows(index, [keys[p] for p in by_key], [DENSE_FIELD])
        if len(read) != len(by_key):
            return None  # a key gone meanwhile: the next state reads again
        vectors = np.asarray([read[keys[p]][DENSE_FIELD] for p in by_key], dtype=np.float32)
        if matrix is None:
            matrix = np.zeros((len(keys), vectors.shape[1]), dtype=np.float32)
        matrix[by_key] = vectors
    release_arrow_memory()
    if matrix is None:
        return None
    norms = np.linalg.norm(matrix, axis=1)
    matrix /= np.where(norms == 0, 1.0, norms)[:, None]  # as Milvus Lite's cosine scales them
    coarse = _bf16(matrix)
    log.info(
        "collection %r: %d name vectors (%d by key, %d dimensions%s) read in %.1f s",
        table.name,
        len(keys),
        len(by_key),
        matrix.shape[1],
        ", bf16 beside" if coarse is not None else "",
        time.perf_counter() - start,
    )
    return NameVectors(state, keys, matrix, coarse)


def _bf16(matrix: np.ndarray) -> Any:
    """``matrix`` as a bf16 torch tensor where that is fast (native bf16 units, torch already
    loaded by the embedding model); else None."""
    if "torch" not in sys.modules:
        return None
    from rag_graphs.store.embed_precision import native_bf16

    if not native_bf16():
        return None
    import torch

    return torch.from_numpy(matrix).to(torch.bfloat16)
