"""An in-process copy of a Milvus Lite chunk collection (its rows and dense vectors), one per store
state, for an exact dense search without Milvus Lite's round trip (graph search's first dense
search, issue 47).

Why: Milvus Lite 3.2 answers a dense search of 21,346 x 384 vectors in 27-30 ms (9,809: ~27 ms),
nearly all of it Python work over every stored row (the sequence map that hides older versions
of a row, the per-row masks), while a float32 matrix-vector product over the same vectors held in
this process takes under 1 ms (numpy's einsum: 0.7 ms for 9,809 x 384). The copy is read once per
store state (``state``: what the caller's caches key on, e.g. ``entity_graph.rows.graph_state``,
which every write, delete and relabel of any process changes), so it follows every change the
same way the row cache does; a new state reads it again (~4 s per 10,000 chunks, logged).

What it returns: the ``k`` rows with the highest cosine similarity, exactly, as ``(Document,
score)`` like ``IndexReads.search`` (ties by stored row order, as Milvus Lite breaks them: the
copy is read in that order, ``Collection.in_order``). That is
not always Milvus Lite's answer: Milvus Lite indexes a flushed segment with faiss HNSW
(``AUTOINDEX``; faiss-cpu is its dependency: M 16, efConstruction 200, efSearch 64), an
approximate search, which on HotpotQA's 9,809 passages missed one of the true top 20 for 60 of
300 dev questions (5 of 300 in the top 5); and its float32 dot products sum in another order, so
a shared hit's score can differ in the last bit. BENCHMARKS.md, "Graph search's first searches
in process (issue 47, round 4)", measures what that changes.

Where it applies (``chunk_mirror`` returns None elsewhere, and the caller searches Milvus): a
Milvus Lite path (a server searches with real indexes, in parallel, and may hold more than one
process should copy), at most ``MAX_MIRRORED_ROWS`` chunks, and only for a search without a
filter: a filtered search (access control, the evaluator's filters) stays in Milvus, which
applies the filter inside the search, because re-implementing Milvus's filter language here
exactly is more risk than a few milliseconds are worth; no filtered search ever sees the copy.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from langchain_core.documents import Document

from rag_graphs.store.fields import DENSE_FIELD
from rag_graphs.store.lite import is_local
from rag_graphs.store.reads import IndexReads

log = logging.getLogger(__name__)

MAX_MIRRORED_ROWS = 100_000
"""Chunks a copy holds at most (HotpotQA's 9,809 take 40 MB: 15 MB of vectors, 25 MB of rows; so
100,000 take ~400 MB); a larger collection is searched in Milvus."""
MIRRORED_STORES = 2
"""Collections whose copies a process keeps (the least recently searched go first)."""
LOAD_BATCH = 5000
"""Rows per read while loading a copy (the copy read 9,809 chunks in ~4 s with a transient peak of ~200 MB
allocated in this process, Milvus Lite's reading of its pages included, holding 40 MB after)."""


@dataclass(frozen=True)
class ChunkMirror:
    """One store state's chunks: ``rows`` (every field a search returns, as stored), and
    ``units``, their dense vectors scaled to length 1 (a zero vector kept as is), row by row."""

    state: Hashable
    rows: Sequence[dict]
    units: np.ndarray

    def search(self, vector: Sequence[float], k: int) -> list[tuple[Document, float]]:
        """The ``k`` rows most similar to ``vector`` by cosine, best first, each a new
        ``Document`` with its similarity (ties: the earlier stored row first)."""
        if k <= 0 or not self.rows:
            return []
        # einsum's own single-threaded loop, not BLAS: OpenBLAS's threads spin on after a
        # matrix-vector product and, on 2 cores, slowed the rest of a graph search by ~20%
        scores = np.einsum("ij,j->i", self.units, _unit(np.asarray(vector, dtype=np.float32)))
        if k < len(scores):
            top = np.argpartition(-scores, k - 1)[:k]
        else:
            top = np.arange(len(scores))
        top = top[np.lexsort((top, -scores[top]))]  # by score, then by row order
        return [(_document(self.rows[i]), float(scores[i])) for i in top]


def chunk_mirror(index: IndexReads, state: Hashable) -> ChunkMirror | None:
    """The copy of ``index``'s chunks for ``state`` (read now if this process holds none for it),
    or None where no copy applies: not a Milvus Lite path, no such collection, more than
    ``MAX_MIRRORED_ROWS`` chunks. ``state`` must be the store's state read just before (a copy
    read after a later write is still replaced at the next state)."""
    if not is_local(index.uri):
        return None
    where = (index.uri, index.collection)
    with _LOCK:  # one copy read at a time: searches of one new state wait for the first's read
        held = _MIRRORS.get(where)
        if held is None or held[0] != state:
            held = _MIRRORS[where] = (state, _read(index, state))
        _MIRRORS.move_to_end(where)
        while len(_MIRRORS) > MIRRORED_STORES:
            _MIRRORS.popitem(last=False)
    return held[1]


_MIRRORS: OrderedDict[tuple[str, str], tuple[Hashable, ChunkMirror | None]] = OrderedDict()
_LOCK = threading.Lock()


def _read(index: IndexReads, state: Hashable) -> ChunkMirror | None:
    """Every chunk a reader sees (``IndexReads.chunks``), with the fields a search returns and its
    dense vector; None when the collection is missing or too large."""
    if not index._exists():
        return None
    count = index.count()
    if count > MAX_MIRRORED_ROWS:
        log.info(
            "collection %r: %d chunks, searched in Milvus (over %d)",
            index.collection,
            count,
            MAX_MIRRORED_ROWS,
        )
        return None
    start = time.perf_counter()
    rows: list[dict] = []
    vectors: list[np.ndarray] = []  # float32 per batch: a batch of Python floats at most at once
    fields = [*index._result_fields(), DENSE_FIELD]
    for batch in index.chunks.in_order(fields, batch_size=LOAD_BATCH):
        vectors.append(np.asarray([row.pop(DENSE_FIELD) for row in batch], dtype=np.float32))
        rows += batch
    if not rows:
        return ChunkMirror(state, (), np.zeros((0, 0), dtype=np.float32))
    matrix = np.concatenate(vectors)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    units = matrix / np.where(norms == 0, 1.0, norms)  # as Milvus Lite's cosine scales them
    log.info(
        "collection %r: %d chunk vectors read for in-process dense search in %.1f s",
        index.collection,
        len(rows),
        time.perf_counter() - start,
    )
    return ChunkMirror(state, tuple(rows), units)


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(vector)
    return vector if norm == 0 else vector / norm


def _document(row: dict) -> Document:
    """``row`` as a search returns it (``IndexReads._to_document``), with copies of its lists, so a
    caller that edits a hit cannot change the copy."""
    return IndexReads._to_document(copy.deepcopy(row))
