"""Search over the chunk store, as graphs see it.

The store itself belongs to ``ingestion``; this module turns a ``RagContext``
into the right open index and returns LangChain ``Document``s whose ``id`` is
the stored chunk id, so citations always resolve.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import ConfigDict, Field

from rag_graphs.config.context import RagContext
from rag_graphs.config.graph_search import GraphSearchOptions
from rag_graphs.entity_graph.rows import check_graph
from rag_graphs.search.cached import cached_search as cached_search
from rag_graphs.search.cached import embeddings_name as embeddings_name
from rag_graphs.search.cached import missing_collection_named
from rag_graphs.search.fusion import most_relevant_last as most_relevant_last
from rag_graphs.search.fusion import reciprocal_rank_fusion as reciprocal_rank_fusion
from rag_graphs.search.fusion import rrf_order as rrf_order
from rag_graphs.search.fusion import unique_union as unique_union
from rag_graphs.store import ChunkIndex, load_embeddings, open_index
from rag_graphs.store.checks import check_collection_exists, check_store_exists
from rag_graphs.store.fields import RRF_K
from rag_graphs.store.filters import search_expr
from rag_graphs.store.generations import generation
from rag_graphs.support.redaction import redact_url


def embeddings_for(ctx: RagContext) -> Embeddings:
    """The context's embedding model (spec loaded once per process, or the instance)."""
    return ctx.embeddings if isinstance(ctx.embeddings, Embeddings) else load_embeddings(ctx.embeddings)


def index_for(ctx: RagContext) -> ChunkIndex:
    """The open chunk index the context points at."""
    return open_index(ctx.store_uri, ctx.collection, embeddings_for(ctx))


def readable_index(ctx: RagContext) -> ChunkIndex:
    """``index_for``, for searching: a store or collection that does not exist is a
    ``SetupError`` (opening a missing one would create it empty, and every answer would
    be ``no_evidence`` as if the corpus did not hold it)."""
    check_store_exists(ctx.store_uri, ctx.collection)
    index = index_for(ctx)
    check_collection_exists(index)
    return index


class ChunkRetriever(BaseRetriever):
    """A LangChain retriever over a ``ChunkIndex``.

    Graphs search through it so every search is a retriever run: LangSmith
    shows it in the trace tree and callbacks (the evaluator's timer) see it.
    In ``graph`` mode the hybrid hits are re-ranked by Personalized PageRank
    over the chunk-entity graph (``rag_graphs.entity_graph.ppr.graph_search``); every hit then
    carries the walk's seeds in ``metadata["graph_seeds"]`` for the reasoning chain.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    index: ChunkIndex
    k: int = 4
    mode: Literal["dense", "hybrid", "graph"] = "hybrid"
    expr: str | None = None
    rrf_k: int = RRF_K  # hybrid search's reciprocal rank fusion constant (RagContext.rrf_k)
    graph: GraphSearchOptions = Field(default_factory=GraphSearchOptions)  # RagContext.graph_search
    cache_size: int = 0  # RagContext.search_cache: dense/hybrid hits shared across questions
    cache_path: str | None = None  # RagContext.search_cache_path: the persistent cache's file
    unit: Literal["chunk", "sentence"] = "chunk"  # RagContext.search_unit (dense/hybrid only)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.mode != "graph":
            return cached_search(
                self.index,
                [query],
                k=self.k,
                mode=self.mode,
                expr=self.expr,
                rrf_k=self.rrf_k,
                size=self.cache_size,
                path=self.cache_path,
                unit=self.unit,
            )[0]
        from rag_graphs.entity_graph.ppr import graph_search

        with missing_collection_named(self.index):
            found = graph_search(self.index, query, k=self.k, expr=self.expr, options=self.graph)
        seeds = [name for name, _ in found.seeds]
        run_manager.on_text(found.describe())
        return [_scored(doc, score, graph_seeds=seeds) for doc, score in found.hits]


@dataclass(frozen=True)
class SearchSpec:
    """Everything that decides a run's searches, read from its ``RagContext`` once: frozen
    and hashable, so the retriever and the batch searcher built from it are built once per
    spec (``search_plan``) and every hop of every run with the same settings reuses them."""

    store_uri: str
    collection: str
    embeddings: str | int  # the spec, or the instance's id (the plan's index holds the instance)
    mode: Literal["auto", "dense", "hybrid", "graph"]  # as asked; the plan says what ran (``resolve``)
    k: int
    expr: str | None
    rrf_k: int
    graph: GraphSearchOptions | None  # RagContext.graph_search (graph and auto modes only)
    cache_size: int
    cache_path: str | None
    unit: Literal["chunk", "sentence"]
    own: int = 0  # RagContext.retriever's id (the plan's retriever holds it); 0: the Milvus store

    @classmethod
    def of(cls, ctx: RagContext, k: int | None = None) -> SearchSpec:
        """The spec of ``ctx``'s searches, fetching ``k`` hits each (default ``ctx.k``)."""
        embeddings = ctx.embeddings if isinstance(ctx.embeddings, str) else id(ctx.embeddings)
        k = k or ctx.k
        return cls(
            store_uri=ctx.store_uri,
            collection=ctx.collection,
            embeddings=embeddings,
            mode=ctx.search_mode,
            k=k,
            expr=search_expr(ctx),
            rrf_k=ctx.rrf_k,
            graph=ctx.graph_search if ctx.search_mode in ("graph", "auto") else None,
            cache_size=ctx.search_cache,
            cache_path=ctx.search_cache_path,
            unit=ctx.search_unit,
            own=id(ctx.retriever) if ctx.retriever is not None else 0,
        )


Mode = Literal["dense", "hybrid", "graph"]


class SearchPlan(NamedTuple):
    """What one ``SearchSpec`` searches with, built once: the open index, the retriever of one
    query and the runnable of a batch (``searcher_for``), and which search that is and why
    (``search_mode="auto"`` resolved against the collection)."""

    spec: SearchSpec
    chunks: ChunkIndex | None  # None: RagContext.retriever searches instead of the store
    retriever: BaseRetriever
    searcher: Runnable[list[str], list[list[Document]]]
    mode: Mode
    why: str  # one line: the search that runs and the reason, for the run's first retrieve step
    generation: int = 0  # the collection's generation when an ``auto`` plan was resolved


def resolve(
    asked: Literal["auto", "dense", "hybrid", "graph"], index: ChunkIndex, unit: str = "chunk"
) -> tuple[Mode, str]:
    """The search ``asked`` runs on ``index``, and why, in one line: ``auto`` is graph search
    when the collection has an entity graph (ingest builds one by default), else hybrid; and
    hybrid when the run asked for small-to-big search (``unit="sentence"``), which the walk
    does not use.

    Raises:
        SetupError: ``graph`` asked of a collection without an entity graph.
    """
    from rag_graphs.entity_graph.rows import has_graph

    where = f"collection {index.collection!r}"
    if asked == "auto" and unit == "sentence":
        return (
            "hybrid",
            "hybrid search (search_mode=auto: search_unit=sentence, which graph search does not use)",
        )
    if asked == "auto":
        if has_graph(index):
            return "graph", f"graph search (search_mode=auto: {where} has an entity graph)"
        return "hybrid", (
            f"hybrid search (search_mode=auto: {where} has no entity graph; "
            "`rag-graphs graph build` adds one)"
        )
    if asked == "graph":
        check_graph(index)
    return asked, f"{asked} search (search_mode={asked})"


_PLANS: OrderedDict[SearchSpec, SearchPlan] = OrderedDict()
_PLANS_LOCK = threading.Lock()
PLANS_KEPT = 64
"""Most search plans kept (least recently used go first): one per distinct settings."""


def search_plan(ctx: RagContext, *, k: int | None = None) -> SearchPlan:
    """The plan of ``ctx``'s searches, built on the first search with these settings: the
    store and collection are checked then (``SetupError`` when missing), not at every search.

    Raises:
        SetupError: the store or collection does not exist, or graph search has no entity graph.
    """
    spec = SearchSpec.of(ctx, k)
    with _PLANS_LOCK:
        plan = _PLANS.get(spec)
        if plan is not None and not _stale(plan):
            _PLANS.move_to_end(spec)
            return plan
    plan = _own_plan(spec, ctx.retriever) if ctx.retriever is not None else _store_plan(spec, ctx)
    with _PLANS_LOCK:
        _PLANS[spec] = plan
        while len(_PLANS) > PLANS_KEPT:
            _PLANS.popitem(last=False)
    return plan


def _stale(plan: SearchPlan) -> bool:
    """True when an ``auto`` plan was resolved before this process last changed its collection
    (an ingest or a graph build may have added the entity graph since). A graph built by
    another process is seen by plans resolved after it, e.g. a new process's."""
    spec = plan.spec
    return (
        spec.mode == "auto"
        and plan.chunks is not None
        and plan.generation != generation(spec.store_uri, spec.collection)
    )


def _own_plan(spec: SearchSpec, source: Any) -> SearchPlan:
    """The plan of a context that brings its own retriever or vector store (``search.own``)."""
    from rag_graphs.search.own import OwnRetriever

    where = {"retriever": type(source).__name__}
    retriever = OwnRetriever(source=source, k=spec.k, tags=["rag-graphs"], metadata=where)
    searcher = retriever.map().with_config(run_name="search_many", tags=[SEARCH_TAG], metadata=where)
    why = f"dense search through your {where['retriever']} (RagContext.retriever)"
    return SearchPlan(spec, None, retriever, searcher, "dense", why)


def _store_plan(spec: SearchSpec, ctx: RagContext) -> SearchPlan:
    index = readable_index(ctx)
    built = generation(spec.store_uri, spec.collection)  # read before resolving: never newer than it
    mode, why = resolve(spec.mode, index, spec.unit)
    retriever = ChunkRetriever(
        index=index,
        k=spec.k,
        mode=mode,
        expr=spec.expr,
        rrf_k=spec.rrf_k,
        graph=spec.graph or GraphSearchOptions(),
        cache_size=spec.cache_size,
        cache_path=spec.cache_path,
        unit=spec.unit,
        tags=["rag-graphs"],
        metadata=_where(spec, mode),
    )
    return SearchPlan(spec, index, retriever, _batch_searcher(spec, mode, index, retriever), mode, why, built)


def stored_vectors(ctx: RagContext) -> Callable[[list[str]], dict[str, list[float]]] | None:
    """The store's vectors by chunk id, for rerankers and compressors (None with the user's own
    retriever: they embed its passages instead)."""
    return None if ctx.retriever is not None else index_for(ctx).vectors


def retriever_for(ctx: RagContext, *, k: int | None = None) -> BaseRetriever:
    """The retriever the context describes (store, collection, k, mode, filter, graph knobs),
    built once per distinct settings (``search_plan``).

    Raises:
        SetupError: the store or collection does not exist (``rag_graphs.store.checks``).
    """
    return search_plan(ctx, k=k).retriever


def search(ctx: RagContext, query: str, *, k: int | None = None) -> list[Document]:
    """Top chunks for ``query``; each carries ``metadata["score"]`` and ``id``."""
    return retriever_for(ctx, k=k).invoke(query)


SEARCH_TAG = "rag-graphs:search"
"""Tag of every search run (the evaluator's timer counts tagged runs as search time)."""


def searcher_for(ctx: RagContext, *, k: int | None = None) -> Runnable[list[str], list[list[Document]]]:
    """A runnable that searches a list of queries as one batch (one embedding call, one store
    request) and returns one ranking per query; traced as ``search_many``. In ``graph`` mode
    each query gets its own graph search (the walk is per question)."""
    return search_plan(ctx, k=k).searcher


def _batch_searcher(
    spec: SearchSpec, mode: Mode, index: ChunkIndex, retriever: ChunkRetriever
) -> Runnable[list[str], list[list[Document]]]:
    if mode == "graph":
        return retriever.map().with_config(
            run_name="search_many", tags=[SEARCH_TAG], metadata=_where(spec, mode)
        )

    def run(batch: list[str]) -> list[list[Document]]:
        return cached_search(
            index,
            batch,
            k=spec.k,
            mode="dense" if mode == "dense" else "hybrid",
            expr=spec.expr,
            rrf_k=spec.rrf_k,
            size=spec.cache_size,
            path=spec.cache_path,
            unit=spec.unit,
        )

    return RunnableLambda(run, name="search_many").with_config(tags=[SEARCH_TAG], metadata=_where(spec, mode))


def search_many(ctx: RagContext, queries: list[str], *, k: int | None = None) -> list[list[Document]]:
    """Top chunks for each query, searched as one batch (one embedding call, one store request)."""
    return searcher_for(ctx, k=k).invoke(list(queries))


def _where(spec: SearchSpec, mode: Mode) -> dict[str, str]:
    """Trace metadata naming the store (credentials masked), the collection and the search that
    ran (``search_mode=auto`` resolved: the root run's ``search_mode`` is what was asked)."""
    return {"store_uri": redact_url(spec.store_uri), "collection": spec.collection, "search_mode": mode}


def _scored(doc: Document, score: float, **extra: Any) -> Document:
    return Document(
        id=doc.id, page_content=doc.page_content, metadata={**doc.metadata, "score": score, **extra}
    )
