"""The one search path every node takes: a ``RagContext`` -> its search plan -> a retriever.

A plan (``search_plan``) is built once per ``PlanKey``, what defines the index and how it is
searched: the open index, checked once (a missing store or collection is a ``SetupError``),
``search_mode="auto"`` resolved against the collection, and the searcher
(``rag_graphs.search.searchers``: dense, hybrid, graph or the user's own) behind the cache
(``rag_graphs.search.cached``). ``k`` and the run's filter are given per search, so per-question
filters reuse the plan. Hits are LangChain ``Document``s whose ``id`` is the stored chunk id, so
citations always resolve.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import ConfigDict

from rag_graphs.config.context import RagContext
from rag_graphs.config.graph_search import GraphSearchOptions
from rag_graphs.entity_graph.rows import check_graph, has_graph
from rag_graphs.search.cached import CachedSearcher, missing_collection_named, scored
from rag_graphs.search.searchers import GraphSearcher, OwnSearcher, Searcher, StoreSearcher
from rag_graphs.store import ChunkIndex, load_embeddings, open_index
from rag_graphs.store.checks import check_collection_exists, check_store_exists
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
    """A LangChain retriever over a plan's searcher, for one ``k`` and filter ``expr``.

    Graphs search through it so every search is a retriever run: LangSmith shows it in the trace
    tree and callbacks (the evaluator's timer) see it. Graph search's hits carry the walk's seeds
    in ``metadata["graph_seeds"]`` for the reasoning chain, and the walk's summary goes to the
    trace as the run's text.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    searcher: Any  # a ``rag_graphs.search.searchers.Searcher`` (a Protocol: not a pydantic type)
    index: ChunkIndex | None = None  # the store searched (None: the user's own retriever)
    k: int = 4
    expr: str | None = None

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        (docs,), walks = _search(self.searcher, self.index, [query], self.k, self.expr)
        if walks[0]:
            run_manager.on_text(walks[0])
        return docs


def _search(
    searcher: Searcher, index: ChunkIndex | None, queries: list[str], k: int, expr: str | None
) -> tuple[list[list[Document]], list[str]]:
    """One list of scored hits per query (``metadata["score"]``; a cached one says so), and per
    query what graph search's walk saw ("" for other searches), for the trace."""
    with missing_collection_named(index):
        rankings = searcher.search(queries, k=k, expr=expr)
    hits, walks = [], []
    for ranking in rankings:
        docs = [scored(doc, score) for doc, score in ranking]
        walks.append(
            next((str(d.metadata.pop("graph_walk")) for d in docs if "graph_walk" in d.metadata), "")
        )
        for doc in docs:
            doc.metadata.pop("graph_walk", None)
        hits.append(docs)
    return hits, walks


Mode = Literal["dense", "hybrid", "graph"]


@dataclass(frozen=True)
class PlanKey:
    """What defines a run's searches, read from its ``RagContext``: the index (store, collection,
    embedding model), how it is searched (mode, unit, RRF constant, graph options) and the caches.
    Not ``k`` nor the filter: they are given per search, so per-question filters (the evaluator's
    distractor and oracle settings, RAPTOR's levels, tenants) share one plan."""

    store_uri: str
    collection: str
    embeddings: str | int  # the spec, or the instance's id (the plan's index holds the instance)
    mode: Literal["auto", "dense", "hybrid", "graph"]  # as asked; the plan says what ran (``resolve``)
    unit: Literal["chunk", "sentence"]
    rrf_k: int
    graph: GraphSearchOptions | None  # graph and auto modes only
    cache_size: int
    cache_path: str | None
    own: int = 0  # RagContext.retriever's id (the plan's searcher holds it); 0: the Milvus store

    @classmethod
    def of(cls, ctx: RagContext) -> PlanKey:
        """The key of ``ctx``'s searches."""
        embeddings = ctx.embeddings if isinstance(ctx.embeddings, str) else id(ctx.embeddings)
        return cls(
            store_uri=ctx.store_uri,
            collection=ctx.collection,
            embeddings=embeddings,
            mode=ctx.search_mode,
            unit=ctx.search_unit,
            rrf_k=ctx.rrf_k,
            graph=ctx.graph_search if ctx.search_mode in ("graph", "auto") else None,
            cache_size=ctx.search_cache,
            cache_path=ctx.search_cache_path,
            own=id(ctx.retriever) if ctx.retriever is not None else 0,
        )


@dataclass(frozen=True)
class SearchPlan:
    """What one ``PlanKey`` searches with, built once: the open index, the searcher (behind the
    cache), which search that is and why (``search_mode="auto"`` resolved against the collection)."""

    key: PlanKey
    index: ChunkIndex | None  # None: RagContext.retriever searches instead of the store
    searcher: Searcher
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


_PLANS: OrderedDict[PlanKey, SearchPlan] = OrderedDict()
_PLANS_LOCK = threading.Lock()
PLANS_KEPT = 64
"""Most search plans kept (least recently used go first): one per distinct settings."""


def search_plan(ctx: RagContext) -> SearchPlan:
    """The plan of ``ctx``'s searches, built on the first search with these settings: the
    store and collection are checked then (``SetupError`` when missing), not at every search.

    Raises:
        SetupError: the store or collection does not exist, or graph search has no entity graph.
    """
    key = PlanKey.of(ctx)
    with _PLANS_LOCK:
        plan = _PLANS.get(key)
        if plan is not None and not _stale(plan):
            _PLANS.move_to_end(key)
            return plan
    plan = build_plan(key, ctx)
    with _PLANS_LOCK:
        _PLANS[key] = plan
        while len(_PLANS) > PLANS_KEPT:
            _PLANS.popitem(last=False)
    return plan


def _stale(plan: SearchPlan) -> bool:
    """True when an ``auto`` plan was resolved before this process last changed its collection
    (an ingest or a graph build may have added the entity graph since). A graph built by
    another process is seen by plans resolved after it, e.g. a new process's."""
    key = plan.key
    return (
        key.mode == "auto"
        and plan.index is not None
        and plan.generation != generation(key.store_uri, key.collection)
    )


def build_plan(key: PlanKey, ctx: RagContext) -> SearchPlan:
    """A new plan for ``key`` (``search_plan`` keeps one per key)."""
    if ctx.retriever is not None:
        name = type(ctx.retriever).__name__
        why = f"dense search through your {name} (RagContext.retriever)"
        return SearchPlan(key, None, OwnSearcher(ctx.retriever), "dense", why)
    index = readable_index(ctx)
    built = generation(key.store_uri, key.collection)  # read before resolving: never newer than it
    mode, why = resolve(key.mode, index, key.unit)
    inner: Searcher = (
        GraphSearcher(index, ctx.graph_search)
        if mode == "graph"
        else StoreSearcher(index, mode, key.unit, key.rrf_k)
    )
    searcher = CachedSearcher(inner, key.cache_size, key.cache_path)
    return SearchPlan(key, index, searcher, mode, why, built)


def stored_vectors(ctx: RagContext) -> Callable[[list[str]], dict[str, list[float]]] | None:
    """The store's vectors by chunk id, for rerankers and compressors (None with the user's own
    retriever: they embed its passages instead)."""
    return None if ctx.retriever is not None else index_for(ctx).vectors


def retriever_for(ctx: RagContext, *, k: int | None = None) -> BaseRetriever:
    """The retriever of ``ctx``'s searches, ``k`` hits each (default ``ctx.k``) under the run's
    filter (``search_expr``), over its plan's searcher (built once per settings, ``search_plan``).

    Raises:
        SetupError: the store or collection does not exist (``rag_graphs.store.checks``).
    """
    plan = search_plan(ctx)
    where = _where(plan, ctx)
    expr = search_expr(ctx) if plan.index is not None else None
    return ChunkRetriever(
        searcher=plan.searcher, index=plan.index, k=k or ctx.k, expr=expr, tags=["rag-graphs"], metadata=where
    )


def search(ctx: RagContext, query: str, *, k: int | None = None) -> list[Document]:
    """Top chunks for ``query``; each carries ``metadata["score"]`` and ``id``."""
    return retriever_for(ctx, k=k).invoke(query)


SEARCH_TAG = "rag-graphs:search"
"""Tag of every search run (the evaluator's timer counts tagged runs as search time)."""


def searcher_for(ctx: RagContext, *, k: int | None = None) -> Runnable[list[str], list[list[Document]]]:
    """A runnable that searches a list of queries as one batch (one embedding call, one store
    request; graph search walks per question) and returns one ranking per query; traced as
    ``search_many``."""
    plan = search_plan(ctx)
    expr = search_expr(ctx) if plan.index is not None else None
    hits = k or ctx.k

    def run(batch: list[str]) -> list[list[Document]]:
        return _search(plan.searcher, plan.index, list(batch), hits, expr)[0]

    return RunnableLambda(run, name="search_many").with_config(tags=[SEARCH_TAG], metadata=_where(plan, ctx))


def search_many(ctx: RagContext, queries: list[str], *, k: int | None = None) -> list[list[Document]]:
    """Top chunks for each query, searched as one batch (one embedding call, one store request)."""
    return searcher_for(ctx, k=k).invoke(list(queries))


def _where(plan: SearchPlan, ctx: RagContext) -> dict[str, str]:
    """Trace metadata naming the store (credentials masked), the collection and the search that
    ran (``search_mode=auto`` resolved: the root run's ``search_mode`` is what was asked); with
    the user's own retriever, its class."""
    if plan.index is None:
        return {"retriever": type(ctx.retriever).__name__}
    return {"store_uri": redact_url(ctx.store_uri), "collection": ctx.collection, "search_mode": plan.mode}
