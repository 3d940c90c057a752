"""The shared ``retrieve`` nodes: search the store with the current query, or with several at once."""

from __future__ import annotations

from langchain_core.documents import Document

from rag_graphs.calls import Body, Call
from rag_graphs.context import RagContext
from rag_graphs.nodes.common import ModelNode, emit, step
from rag_graphs.nodes.loop import normalize_query
from rag_graphs.retrieval import reciprocal_rank_fusion, retriever_for, searcher_for, unique_union
from rag_graphs.state import RagState, usage


def new_queries(state: RagState, wanted: list[str]) -> list[str]:
    """``wanted`` without queries searched earlier in this run or repeated among themselves."""
    seen = {normalize_query(s["query"]) for s in state.get("searches", [])}
    out = []
    for query in wanted:
        if normalize_query(query) not in seen:
            seen.add(normalize_query(query))
            out.append(query)
    return out


def repeated(wanted: list[str]) -> dict:
    """The update of a round whose every query was searched already: nothing new found."""
    text = f"already searched in this run; not searched again: {'; '.join(wanted)}"
    return {"latest": [], "latest_repeated": True, "steps": [step("note", query=wanted[0], text=text)]}


def found(queries: list[str], rankings: list[list[Document]], docs: list[Document]) -> dict:
    """The update of one retrieval round: hits, the searches, one hop, and a step per query."""
    ids = [str(d.id) for d in docs]
    emit("end", doc_ids=ids)
    searches = [
        {"query": q, "doc_ids": [str(d.id) for d in ranking]}
        for q, ranking in zip(queries, rankings, strict=True)
    ]
    return {
        "documents": docs,
        "searches": searches,
        "hops": 1,
        "latest": ids,
        "latest_repeated": False,
        "steps": [step("retrieve", query=s["query"], doc_ids=s["doc_ids"]) for s in searches],
        "usage": usage(retrievals=len(queries), hops=1),
    }


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
    docs = yield Call(retriever_for(ctx), query)
    return found([query], [docs], docs)


retrieve = ModelNode(retrieve_body, "retrieve")


def make_retrieve_many(*, fuse: bool = False, with_question: bool = True) -> ModelNode:
    """Build a node that searches ``subqueries`` (and the question) in one batch.

    ``fuse=False`` keeps the unique union of the hits (multi-query, step-back);
    ``fuse=True`` keeps the top ``k`` of their reciprocal rank fusion
    (RAG-Fusion, ``RagContext.rrf_k``). Queries already searched in this run
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
        rankings = yield Call(searcher_for(ctx), queries)
        if not fuse:
            return found(queries, rankings, unique_union(rankings))
        docs = reciprocal_rank_fusion(rankings, k=ctx.rrf_k, top_k=ctx.k)
        scores = ", ".join(f"{d.id}: {d.metadata['rrf_score']:.4f}" for d in docs)
        update = found(queries, rankings, docs)
        update["steps"].append(step("note", text=f"RRF k={ctx.rrf_k}: {scores}"))
        return update

    return ModelNode(retrieve_many, "retrieve_many")
