"""Graph search's first searches: the dense hits that seed the walk and the hybrid ranking it keeps.

Both need only the question's vector, so graph search starts them before the question's NER and
entity look-ups and they run beside those in a worker thread (as far as the GIL lets: Milvus Lite
runs in this process; at 21k passages they are the longest part of a graph search). With hybrid's
top protected (``GraphSearchOptions.protects_hybrid``) one dense and one BM25 search give both
rankings (``ChunkIndex.search_legs``); without, one dense search.

Without a filter, on a Milvus Lite store, the dense search runs in this process over the store
state's copy of the chunks (``store.mirror.ChunkMirror``, given as ``mirror``): exact cosine in
~1 ms where Milvus Lite's HNSW search took ~27 ms (BENCHMARKS.md, "Graph search's first searches
in process"), and BM25 over the copy's weights (``store.bm25``, ~1 ms where Milvus Lite's took
~35-45 ms at 21k passages: "Graph search in process, round 5"). A filtered search never gets a copy
(``graph_search``).

The worker is the search's own and ends with it: ``first_searches`` joins it on every way out,
error or not. A worker left running past a failed graph search would, once the run closed the
store, block on Milvus Lite's shut-down server, and the interpreter waits for it at exit (the
process never ends: issue 41).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

from langchain_core.documents import Document

from rag_graphs.store.index import ChunkIndex
from rag_graphs.store.keywords import keyword_query
from rag_graphs.store.mirror import ChunkMirror

THREAD_NAME = "graph-search"
"""Name prefix of the first searches' worker thread (a test checks none outlives a search)."""

Hits = list[tuple[Document, float]]


@dataclass(frozen=True)
class FirstHits:
    """The first searches' rankings: ``dense`` seeds the walk; ``hybrid`` (when hybrid's top is
    protected) is the ranking graph search keeps on top and returns when it has nothing to walk."""

    dense: Hits
    hybrid: Hits | None = None

    @property
    def ranking(self) -> Hits:
        """The ranking not to lose to: hybrid's when it was searched, else the dense one."""
        return self.hybrid if self.hybrid is not None else self.dense

    @property
    def hits(self) -> Hits:
        """Every first hit (dense first), for the neighbourhood: each joins the walk with its entities."""
        return self.dense + (self.hybrid or [])

    def documents(self) -> dict[str, Document]:
        """Chunk id -> the document a first search already read (the dense one when both did)."""
        return {str(d.id): d for d, _ in [*(self.hybrid or []), *self.dense]}


def search_first_hits(
    index: ChunkIndex,
    query: str,
    vector: list[float],
    *,
    k: int,
    expr: str | None,
    hybrid: bool,
    mirror: ChunkMirror | None = None,
) -> FirstHits:
    """The first searches, ``k`` hits each through ``expr``, with the question vector already
    computed: dense and hybrid from one dense and one BM25 search when ``hybrid``, else dense.
    ``mirror``: the in-process copy (only ever given for a search without a filter), which
    searches the dense leg and, when it holds BM25 weights, the BM25 one; else Milvus searches."""
    if mirror is not None and expr is not None:
        raise ValueError("a filtered search never reads the in-process copy")
    dense = mirror.search(vector, k) if mirror is not None else None
    if hybrid:
        sparse = None
        if mirror is not None:
            sparse = mirror.keyword_search(keyword_query(query, index.bm25_stop_words), k)
        dense, fused = index.search_legs(query, vector, k=k, expr=expr, dense=dense, sparse=sparse)
        return FirstHits(list(dense), list(fused))
    if dense is not None:
        return FirstHits(dense)
    return FirstHits(index.search_many([query], k=k, mode="dense", expr=expr, vectors=[vector])[0])


@contextmanager
def first_searches(
    index: ChunkIndex,
    query: str,
    vector: list[float],
    *,
    k: int,
    expr: str | None,
    hybrid: bool,
    mirror: ChunkMirror | None = None,
) -> Iterator[Future[FirstHits]]:
    """``search_first_hits`` in a worker thread of its own while the ``with`` body runs; the
    future gives the ``FirstHits``. On leaving the body, however it leaves, a search not yet
    started is cancelled and a running one is waited for, so its thread has ended."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix=THREAD_NAME) as worker:
        future = worker.submit(
            search_first_hits, index, query, vector, k=k, expr=expr, hybrid=hybrid, mirror=mirror
        )
        try:
            yield future
        finally:
            future.cancel()  # a running search cannot be cancelled: the executor's exit joins it


def plain_ranking(index: ChunkIndex, query: str, *, k: int, expr: str | None, hybrid: bool) -> Hits:
    """What graph search returns on a collection without an entity graph: the ranking it would
    protect (hybrid's when ``hybrid``), else the dense ranking."""
    return index.search(query, k=k, mode="hybrid" if hybrid else "dense", expr=expr)
