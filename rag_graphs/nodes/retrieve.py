"""The shared ``retrieve`` nodes: search the store with the current query, or with several at once;
and ``RagRetriever``, the same step as a LangChain retriever."""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, Field, InstanceOf, field_validator

from rag_graphs.config.context import RagContext
from rag_graphs.config.fields import checked_k
from rag_graphs.llm.calls import Body, Call
from rag_graphs.nodes.chat import calls_usage, chat_model
from rag_graphs.nodes.events import emit, step
from rag_graphs.nodes.fresh import check_question
from rag_graphs.nodes.model_node import ModelNode, run_prompts
from rag_graphs.search.cache import normalise
from rag_graphs.search.compress import compressor_for
from rag_graphs.search.fusion import rrf_order, unique_union
from rag_graphs.search.neighbours import expander_for
from rag_graphs.search.rerank import reranker_for
from rag_graphs.search.retrieval import (
    embeddings_for,
    index_for,
    retriever_for,
    search_plan,
    searcher_for,
    stored_vectors,
)
from rag_graphs.state import FusedRound, RagState, Search, Step, Usage, add_usage, merge_documents, usage
from rag_graphs.store.filters import search_expr


def new_queries(state: RagState, wanted: list[str]) -> list[str]:
    """``wanted`` without queries searched earlier in this run or repeated among themselves."""
    seen = {normalise(s["query"]) for s in state.get("searches", [])}
    out = []
    for query in wanted:
        if normalise(query) not in seen:
            seen.add(normalise(query))
            out.append(query)
    return out


def repeated(wanted: list[str]) -> dict:
    """The update of a round whose every query was searched already: nothing new found."""
    text = f"already searched in this run; not searched again: {'; '.join(wanted)}"
    return {"latest": [], "latest_repeated": True, "steps": [step("note", query=wanted[0], text=text)]}


def ranked(state: RagState, new: list[Search], hits: list[Document], ctx: RagContext) -> FusedRound:
    """Every document gathered so far as one ranking, best first: the reciprocal rank fusion
    of every search of the run (each query's hits count as one ranking), as the update of
    ``documents`` (``FusedRound``: the round's hits and the fused order of ids; the state's
    reducer puts the ranking together, so documents held already are not sent again).

    ``documents`` is the run's final context and what R@k reads, so a multi-hop
    method's later hops rank beside its first instead of after all of it. Once a run
    has a second round, its first round's searches weigh ``first_hop_weight``: later
    rounds search with model-written queries, and a passage they alone found should
    not push out one the question's own search ranked high unless they agree on it.
    """
    held = {d.id for d in [*state.get("documents", []), *hits]}
    searches = [*state.get("searches", []), *new]
    rankings = [[i for i in s["doc_ids"] if i in held] for s in searches]
    rounds = [s.get("hop", 1) for s in searches]
    several = len(set(rounds)) > 1
    weights = [ctx.first_hop_weight if several and r == 1 else 1.0 for r in rounds]
    return {"new": hits, "order": rrf_order(rankings, k=ctx.rrf_k, weights=weights)}


def fetch_k(ctx: RagContext) -> int:
    """How many candidates each search fetches: ``fetch_k`` when a reranker keeps ``k`` of them."""
    return max(ctx.fetch_k, ctx.k) if ctx.reranker != "none" else ctx.k


def reranked(ctx: RagContext, queries: list[str], rankings: list[list[Document]]) -> tuple[list, list, Usage]:
    """Each query's candidates cut to ``k`` by the context's reranker, a note step per query
    saying what it kept and dropped (none when no reranker is set), and the LLM usage of an
    ``llm`` reranker."""
    if ctx.reranker == "none":  # the default: no model loaded, no store read
        return rankings, [], {}
    reranker = reranker_for(
        ctx.reranker,
        embeddings_for(ctx),
        lambda_mult=ctx.mmr_lambda,
        stored=stored_vectors(ctx),
        model=lambda: chat_model(ctx),
    )
    if reranker is None:
        return rankings, [], {}
    kept, notes = [], []
    for query, ranking in zip(queries, rankings, strict=True):
        top = reranker.rerank(query, ranking, ctx.k)
        ids = {d.id for d in top}
        dropped = [str(d.id) for d in ranking if d.id not in ids]
        emit("rerank", reranker=reranker.name, kept=[str(d.id) for d in top], dropped=dropped)
        text = f"{reranker.name}: kept {len(top)} of {len(ranking)}; dropped {', '.join(dropped) or 'none'}"
        if fallback := getattr(reranker, "fallback", ""):  # the LLM reranker's reply was unusable
            text += f" ({fallback})"
        notes.append(step("note", query=query, doc_ids=[str(d.id) for d in top], text=text))
        kept.append(top)
    return kept, notes, calls_usage(getattr(reranker, "replies", []))


def compressed(
    ctx: RagContext, queries: list[str], rankings: list[list[Document]], notes: list
) -> tuple[list[list[Document]], list, Usage]:
    """Each ranking through the context's compression chain (``RagContext.compress``), a note
    step per query naming what was cut and the prompt tokens saved (none when off), and the LLM
    usage of an ``llm`` extractor. Kept passages keep their ids, so citations still resolve."""
    if ctx.compress == "none":
        return rankings, notes, {}
    chain = compressor_for(
        ctx.compress,
        embeddings_for(ctx),
        stored=stored_vectors(ctx),
        model=lambda: chat_model(ctx),
        max_concurrency=ctx.max_concurrency,
    )
    if chain is None:
        return rankings, notes, {}
    out, notes, replies = [], list(notes), []
    for query, ranking in zip(queries, rankings, strict=True):
        result = chain.compress(query, ranking)
        replies += result.replies
        emit("compress", dropped=result.dropped, shortened=result.shortened, tokens_saved=result.tokens_saved)
        notes.append(step("note", query=query, doc_ids=result.dropped, text=result.describe(ctx.compress)))
        out.append(result.kept)
    return out, notes, calls_usage(replies)


def expanded(
    ctx: RagContext, queries: list[str], rankings: list[list[Document]], notes: list
) -> tuple[list[list[Document]], list]:
    """Each ranking with its hits' reading-order neighbours (``RagContext.expand``), and a note
    step per query naming what was added (none when expansion is off)."""
    expander = (
        expander_for(ctx.expand, index_for(ctx), ctx.expand_max_tokens, expr=search_expr(ctx))
        if ctx.expand != "none"
        else None
    )
    if expander is None:
        return rankings, notes
    out, notes = [], list(notes)
    for query, ranking in zip(queries, rankings, strict=True):
        grown, added = expander.expand(ranking)
        emit("expand", added=added)
        text = f"expand {ctx.expand}: added {len(added)} ({', '.join(added) or 'none'})"
        notes.append(step("note", query=query, doc_ids=added, text=text))
        out.append(grown)
    return out, notes


class Kept(NamedTuple):
    """What the retrieval step kept of one round's searches."""

    rankings: list[list[Document]]
    """Each query's passages, reranked, expanded and compressed, best first: what a prompt shows."""
    notes: list[Step]
    """A note step per query and stage that changed something (rerank, expand, compress)."""
    usage: Usage
    """The LLM usage of an ``llm`` reranker or extractor."""


def keep(ctx: RagContext, queries: list[str], rankings: list[list[Document]]) -> Kept:
    """Each search's hits through the context's reranker (``fetch_k`` candidates cut to ``k``),
    expansion and compression, in that order."""
    rankings, notes, reranking = reranked(ctx, queries, rankings)
    rankings, notes = expanded(ctx, queries, rankings, notes)
    rankings, notes, compressing = compressed(ctx, queries, rankings, notes)
    return Kept(rankings, notes, add_usage(reranking, compressing))


def found(
    state: RagState,
    ctx: RagContext,
    queries: list[str],
    rankings: list[list[Document]],
    kept: Kept | None = None,
) -> dict:
    """The update of one retrieval round: the re-ranked documents, the searches, one hop, and
    a step per query. ``latest`` is the round's unique hits in rank order.

    With a reranker set the searches fetched ``fetch_k`` candidates; each is cut to ``k``
    here (a note step per query names what was dropped), expanded, then compressed
    (``keep``; a caller that already showed the kept passages passes them as ``kept``),
    before the searches are recorded."""
    served = [
        q
        for q, ranking in zip(queries, rankings, strict=True)
        if ranking and ranking[0].metadata.get("cached")
    ]
    rankings, notes, processing = kept if kept is not None else keep(ctx, queries, rankings)
    if served:  # the cross-question search cache answered these (rag_graphs.search.cache); their steps say so
        emit("cache", queries=served)
    searches: list[Search] = [
        {"query": q, "doc_ids": [str(d.id) for d in ranking], "hop": state.get("hops", 0) + 1}
        for q, ranking in zip(queries, rankings, strict=True)
    ]
    hits = unique_union(rankings)
    ids = [str(d.id) for d in hits]
    emit("end", doc_ids=ids)
    why = which_search(state, ctx)
    return {
        "documents": ranked(state, searches, hits, ctx),
        "searches": searches,
        "hops": 1,
        "latest": ids,
        "latest_repeated": False,
        "steps": [
            step("retrieve", query=s["query"], doc_ids=s["doc_ids"], **_how(ranking, why if i == 0 else ""))
            for i, (s, ranking) in enumerate(zip(searches, rankings, strict=True))
        ]
        + notes,
        "usage": add_usage(usage(retrievals=len(queries), hops=1), processing),
    }


def which_search(state: RagState, ctx: RagContext) -> str:
    """On the run's first retrieval, the search that runs and why, e.g. ``graph search
    (search_mode=auto: collection 'docs' has an entity graph)``: with the default ``auto`` the
    collection decides, and the first retrieve step should say what it decided. Later rounds
    search the same way: ``""``."""
    return "" if state.get("hops", 0) else search_plan(ctx).why


def _how(ranking: list[Document], why: str = "") -> dict:
    """What the step says about how the hits were found: ``why`` (which search, on the run's
    first step), then graph search's seed entities; a search the cross-question cache answered
    says so, in the same step, so a repeated run has the same steps as the first; a small-to-big
    search quotes the sentence that found the top hit."""
    parts = [why] if why else []
    seeds = ranking[0].metadata.get("graph_seeds") if ranking else None
    if ranking and ranking[0].metadata.get("cached"):
        parts.append("search cache hit")
    elif ranking and "matched_sentence" in ranking[0].metadata:
        parts.append(f"small-to-big, best sentence: {ranking[0].metadata['matched_sentence'][:160]}")
    elif seeds is not None:
        parts.append(f"graph seeds: {', '.join(seeds[:8]) or 'none (hybrid order)'}")
    return {"text": "; ".join(parts)} if parts else {}


def retrieve_body(state: RagState, ctx: RagContext) -> Body[dict]:
    """Search with ``state["query"]`` (or the question) and add the hits to ``documents``.

    A query already searched in this run is not searched again (same query,
    same store, same k gives the same hits, which ``documents`` already
    holds): the round sets ``latest_repeated`` and the step records the skip.
    """
    query = state.get("query") or state["question"]
    if not new_queries(state, [query]):
        return repeated([query])
    emit("start", query=query)
    docs = yield Call(retriever_for(ctx, k=fetch_k(ctx)), query)
    return found(state, ctx, [query], [docs])


retrieve = ModelNode(retrieve_body, "retrieve")


def make_retrieve_many(*, fuse: bool = False, with_question: bool = True) -> ModelNode:
    """Build a node that searches ``subqueries`` (and the question) in one batch.

    The hits join ``documents`` ranked by reciprocal rank fusion (as every
    retrieval does); ``fuse=True`` (RAG-Fusion) also answers from the top ``k``
    of that fusion only (``evidence``). Queries already searched in this run
    are skipped. One step per query records what it found; the searches count
    as one hop, since they run side by side.
    """

    def retrieve_many(state: RagState, ctx: RagContext) -> Body[dict]:
        wanted = ([state["question"]] if with_question else []) + list(state.get("subqueries", []))
        wanted = wanted or [state["question"]]  # no usable sub-query: search the question
        queries = new_queries(state, wanted)
        if not queries:
            return repeated(wanted)
        emit("start", queries=queries)
        rankings = yield Call(searcher_for(ctx, k=fetch_k(ctx)), queries)
        update = found(state, ctx, queries, rankings)
        if fuse:  # RAG-Fusion answers from the top k of the fused ranking
            top = merge_documents(state.get("documents"), update["documents"])[: ctx.k]
            scores = ", ".join(f"{d.id}: {d.metadata['rrf_score']:.4f}" for d in top)
            update["evidence"] = top
            update["steps"].append(step("note", text=f"RRF k={ctx.rrf_k}, top {ctx.k}: {scores}"))
        return update

    return ModelNode(retrieve_many, "retrieve_many")


class RagRetriever(BaseRetriever):
    """The shared retrieve step as a LangChain retriever: a query's passages exactly as a
    method's ``retrieve`` node keeps them (the context's search, then ``keep``: reranker,
    expansion, compression), best first, each with its chunk id, under ``context`` (default: a
    ``RagContext`` from the environment). Exported as ``rag_graphs.RagRetriever``::

        docs = RagRetriever(context=RagContext(reranker="mmr"), k=6).invoke("Who founded Django?")
        docs = retriever.invoke("Who founded Django?", k=1)  # one call's own k

    ``k`` is the context's ``k`` for this retriever: LangChain retrievers take the number of
    results as ``k`` (langchain-tests' standard suite checks it), so ``RagRetriever(k=3)`` sets it
    without building another context, and ``invoke(query, k=1)`` sets it for one call (in that
    order of precedence; unset, ``context.k``). Bounded like ``RagContext.k`` (1 to 16,384). It
    counts what the search keeps, as in a method's retrieve step: a reranker cuts ``fetch_k``
    candidates to ``k``; ``expand`` then adds neighbours after them and ``compress`` may drop
    some, so ``k`` documents come back exactly when both are off (the default) and the store
    holds at least ``k`` chunks the search may read.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    context: InstanceOf[RagContext] = Field(default_factory=RagContext)
    k: int | None = None
    """How many passages to keep; None: ``context.k``."""

    @field_validator("k", mode="before")
    @classmethod
    def _bounded(cls, value: object) -> int | None:
        return None if value is None else checked_k(value, "RagRetriever.k")

    def _context(self, k: object) -> RagContext:
        """The context of one call: ``context`` with the call's ``k``, else the retriever's."""
        wanted = checked_k(k, "RagRetriever.invoke(k=...)") if k is not None else self.k
        if wanted is None or wanted == self.context.k:
            return self.context
        return replace(self.context, k=wanted)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        ctx = self._context(k)
        check_question(query)
        hits = retriever_for(ctx, k=fetch_k(ctx)).invoke(query, config={"callbacks": run_manager.get_child()})
        with run_prompts(ctx):  # an llm reranker or extractor words its prompt as the run's
            return keep(ctx, [query], [hits]).rankings[0]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        # LangChain's default runs the sync method in a thread but drops extra arguments (k):
        # the store, reranker and compressor calls block, so a thread it stays, with k passed.
        return await run_in_executor(
            None, self._get_relevant_documents, query, run_manager=run_manager.get_sync(), k=k
        )
