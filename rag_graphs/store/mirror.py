"""An in-process copy of a Milvus Lite chunk collection (its rows, dense vectors and BM25 weights),
one per store state, for graph search's first searches and its reads of chunk rows without Milvus
Lite's round trips (issue 47, rounds 4 and 5): an exact dense search, a BM25 search
(``store.bm25``), and rows and stored vectors by id (the learned ranker's pool, the final fetch).

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

BM25 (``keyword_search``, on a hybrid collection) scores as the store's BM25 function does but with
N, document frequencies and average length over the live rows, where Milvus Lite takes them per
segment over every row stored there, superseded and deleted ones included (``store.bm25``):
identical first-five rankings on all 1,098 dev questions of the evaluator's three stores, a few
questions reordered on a store ingested in four steps (BENCHMARKS.md, "Graph search in process,
round 5"); building its weights adds ~3-4 s per 21,000 chunks to the copy's reading.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np
from langchain_core.documents import Document

from rag_graphs.store.bm25 import Bm25Matrix
from rag_graphs.store.fields import DENSE_FIELD, PRIMARY_FIELD, TEXT_FIELD
from rag_graphs.store.lite import is_local
from rag_graphs.store.reads import IndexReads

log = logging.getLogger(__name__)

MAX_MIRRORED_ROWS = 100_000
"""Chunks a copy holds at most (HotpotQA's 9,809 take ~55 MB: 15 MB of vectors as stored, 15 MB
scaled to length 1, 25 MB of rows; so 100,000 take ~550 MB); a larger collection is searched in
Milvus."""
MIRRORED_STORES = 2
"""Collections whose copies a process keeps (the least recently searched go first)."""
LOAD_BATCH = 5000
"""Rows per read while loading a copy (the copy read 9,809 chunks in ~4 s with a transient peak of ~200 MB
allocated in this process, Milvus Lite's reading of its pages included, holding 40 MB after)."""


@dataclass(frozen=True)
class ChunkMirror:
    """One store state's chunks: ``rows`` (every field a search returns, as stored), ``vectors``
    (their dense vectors as stored, float32 as Milvus keeps them), ``units`` (those scaled to
    length 1, a zero vector kept as is), row by row; ``keywords``, their texts' BM25 weights
    (None: a dense-only collection); ``positions``, chunk id -> row."""

    state: Hashable
    rows: Sequence[dict]
    units: np.ndarray
    vectors: np.ndarray | None = None
    keywords: Bm25Matrix | None = None
    positions: dict[str, int] = field(default_factory=dict)

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

    def keyword_search(self, query: str, k: int) -> list[tuple[Document, float]] | None:
        """The ``k`` rows BM25 scores highest for ``query`` (already less its function words, as
        the store is asked: ``keywords.keyword_query``), best first, each a new ``Document`` with
        its BM25 score (Milvus Lite hands the same back negated, as a distance; the first searches
        use only the order); None when the copy holds no BM25 weights (the caller asks the store)."""
        if self.keywords is None:
            return None
        return [(_document(self.rows[i]), score) for i, score in self.keywords.top(query, k)]

    def get(self, ids: Sequence[str]) -> list[Document]:
        """The chunks of ``ids`` as ``IndexReads.get`` returns them: in the order asked, missing
        ids left out, each a new ``Document``."""
        return [_document(self.rows[self.positions[i]]) for i in ids if i in self.positions]

    def stored_rows(self, ids: Sequence[str]) -> dict[str, dict]:
        """Chunk id -> its stored row, for the ids held, in the order asked; the rows are the
        copy's own (read them, do not edit them)."""
        return {i: self.rows[p] for i in dict.fromkeys(ids) if (p := self.positions.get(i)) is not None}

    def stored(self, ids: Sequence[str]) -> dict[str, tuple[dict, np.ndarray]]:
        """Chunk id -> (its stored row, its dense vector as stored), for the ids held; the row is the
        copy's own (read it, do not edit it)."""
        if self.vectors is None:
            return {}
        return {i: (self.rows[p], self.vectors[p]) for i in ids if (p := self.positions.get(i)) is not None}


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
    read = time.perf_counter()
    keywords = None
    if index.hybrid:
        keywords = Bm25Matrix.build([str(row.get(TEXT_FIELD) or "") for row in rows])
    positions = {str(row[PRIMARY_FIELD]): i for i, row in enumerate(rows)}
    log.info(
        "collection %r: %d chunk rows and vectors read in %.1f s (BM25 weights: %.1f s)",
        index.collection,
        len(rows),
        read - start,
        time.perf_counter() - read,
    )
    return ChunkMirror(state, tuple(rows), units, matrix, keywords, positions)


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(vector)
    return vector if norm == 0 else vector / norm


def _document(row: dict) -> Document:
    """``row`` as a search returns it (``IndexReads._to_document``), with copies of its lists, so a
    caller that edits a hit cannot change the copy."""
    return IndexReads._to_document(copy.deepcopy(row))
