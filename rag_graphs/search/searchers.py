"""One searcher interface, four searchers: dense, hybrid and graph search over the store, and the
user's own retriever.

A ``Searcher`` ranks chunks for a batch of queries, with the hit count ``k`` and the filter
``expr`` given per call: what defines the searcher (its index, mode, unit, options) is fixed when
it is built, once per settings (``rag_graphs.search.retrieval.search_plan``), while the filter
changes per tenant, per question (the evaluator's distractor and oracle filters) and per RAPTOR
level. ``key`` names what defines it, and ``state()`` reads, at call time, the store state its
rankings depend on, as every process sees it: the cache wrapping any searcher
(``rag_graphs.search.cached.CachedSearcher``) keys on both, so a delete, relabel or graph build by
any process, or another caller's filter, never gets a stale or foreign ranking.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal, Protocol

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore

from rag_graphs.config.graph_search import GraphSearchOptions
from rag_graphs.search.cache import Ranking
from rag_graphs.search.own import search_own
from rag_graphs.store import ChunkIndex
from rag_graphs.store.embeddings import embeddings_identity
from rag_graphs.store.fields import RRF_K
from rag_graphs.store.sentences import children_of, has_sentences, search_parents, sentence_collection

NO_SCORE = math.nan
"""The score of a hit whose source gives none (a retriever without scores): not stored on the hit."""
StoreMode = Literal["dense", "hybrid"]


class Searcher(Protocol):
    """Rankings for queries, best first, ``k`` deep, each hit admitted by ``expr``."""

    @property
    def key(self) -> Hashable:
        """What defines this searcher's rankings besides the store's state, ``k``, ``expr`` and
        the query (a cache keys on it); None: its rankings cannot be cached."""
        ...

    def state(self) -> Hashable:
        """The store's state the rankings depend on, read now (every process's writes change it)."""
        ...

    def search(
        self, queries: list[str], *, k: int, expr: str | None, state: Hashable | None = None
    ) -> list[Ranking]:
        """One ranking per query. ``state``: what ``state()`` returned to this caller just now
        (a cache keyed on it), which a searcher that reads it too may use instead of asking the
        store again; None: it reads what it needs."""
        ...


@dataclass(frozen=True)
class StoreSearcher:
    """Dense or hybrid (BM25 + dense, fused by RRF in Milvus) search of the chunks, or of their
    sentence rows for their parent chunks (``unit="sentence"``, small-to-big)."""

    index: ChunkIndex
    mode: StoreMode
    unit: Literal["chunk", "sentence"] = "chunk"
    rrf_k: int = RRF_K

    @property
    def key(self) -> Hashable:
        # what BM25 is asked (``keywords``) decides a hybrid ranking too
        bm25 = " ".join(sorted(self.index.bm25_stop_words)) if self.mode == "hybrid" else ""
        return (_where(self.index), self.mode, self.unit, self.rrf_k, bm25)

    def state(self) -> Hashable:
        if self.unit == "chunk":
            return self.index.fingerprint()
        return (self.index.fingerprint(), children_of(self.index).fingerprint())

    def search(
        self, queries: list[str], *, k: int, expr: str | None, state: Hashable | None = None
    ) -> list[Ranking]:
        if self.unit == "sentence":
            _check_sentences(self.index)
            run = partial(search_parents, self.index)
        else:
            run = partial(self.index.search_many, missing_ok=False)
        return run(queries, k=k, mode=self.mode, expr=expr, rrf_k=self.rrf_k)


@dataclass(frozen=True)
class GraphSearcher:
    """Graph search (``rag_graphs.entity_graph``): the question's entities seed a Personalized
    PageRank over their neighbourhood in the store, under hybrid search's confident top. Each hit
    carries the walk's seeds (``graph_seeds``) and what the walk saw (``graph_walk``)."""

    index: ChunkIndex
    options: GraphSearchOptions = field(default_factory=GraphSearchOptions)

    @property
    def key(self) -> Hashable:
        return (_where(self.index), "graph", self.options, " ".join(sorted(self.index.bm25_stop_words)))

    def state(self) -> Hashable:
        from rag_graphs.entity_graph.rows import graph_state

        return graph_state(self.index)  # graph search's row cache keys on it too

    def search(
        self, queries: list[str], *, k: int, expr: str | None, state: Hashable | None = None
    ) -> list[Ranking]:
        from rag_graphs.entity_graph.graph_search import graph_search

        rankings = []
        for query in queries:  # the cache's state read serves every query (it read one for all)
            found = graph_search(self.index, query, k=k, expr=expr, options=self.options, state=state)
            seeds, walk = [name for name, _ in found.seeds], found.describe()
            rankings.append([(_with(doc, graph_seeds=seeds, graph_walk=walk), s) for doc, s in found.hits])
        return rankings


@dataclass(frozen=True)
class OwnSearcher:
    """The user's own retriever or vector store (``RagContext.retriever``), its hits normalised
    (``rag_graphs.search.own``). Never cached: nothing says when its corpus changes."""

    source: BaseRetriever | VectorStore
    timeout: float = 60.0  # RagContext.retriever_timeout

    @property
    def key(self) -> Hashable:
        return None

    def state(self) -> Hashable:
        return None

    def search(
        self, queries: list[str], *, k: int, expr: str | None, state: Hashable | None = None
    ) -> list[Ranking]:
        hits = [search_own(self.source, query, k, self.timeout) for query in queries]
        return [[(doc, float(doc.metadata.get("score", NO_SCORE))) for doc in docs] for docs in hits]


def _where(index: ChunkIndex) -> tuple[str, str, str]:
    """The store, collection and embedding model, as every process names them (a key that
    outlives the process: the persistent cache shares it)."""
    uri = index.uri if "://" in index.uri else str(Path(index.uri).expanduser().resolve())
    return (uri, index.collection, embeddings_identity(index.embeddings))


def _with(doc: Document, **extra: Any) -> Document:
    return Document(id=doc.id, page_content=doc.page_content, metadata={**doc.metadata, **extra})


def _check_sentences(index: ChunkIndex) -> None:
    """Refuse small-to-big search on a collection without sentence rows (searching nothing would
    look like a corpus with no answer), naming the setting."""
    if not has_sentences(index):
        raise ValueError(
            f"RagContext.search_unit='sentence': collection {index.collection!r} has no sentence rows "
            f"(no collection {sentence_collection(index.collection)!r}); build them with "
            f"`rag-graphs sentences build --collection {index.collection}` or ingest with "
            "`rag-graphs ingest --children`, or set search_unit=chunk (RAG_GRAPHS_SEARCH_UNIT)"
        )
