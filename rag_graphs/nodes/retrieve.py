"""The shared ``retrieve`` node: search the store with the current query."""

from __future__ import annotations

from collections.abc import Callable

from langgraph.runtime import Runtime

from rag_graphs.context import RagContext, get_context
from rag_graphs.nodes.common import emit
from rag_graphs.retrieval import reciprocal_rank_fusion, search, search_many, unique_union
from rag_graphs.state import RagState, usage


def normalize_query(query: str) -> str:
    """Case- and spacing-insensitive form used to detect repeated queries."""
    return " ".join(query.lower().split()).strip(" ?.!")


def is_repeat(state: RagState) -> bool:
    """True when the pending query was already searched in this run."""
    pending = normalize_query(state.get("query") or state["question"])
    return pending in {normalize_query(q) for q in state.get("queries", [])}


def last_retrieval_skipped(state: RagState) -> bool:
    """True when the most recent retrieve step was a skipped repeat."""
    for step in reversed(state.get("steps", [])):
        if step.get("node") == "retrieve":
            return step.get("kind") == "note"
    return False


def retrieve(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Search with ``state["query"]`` (or the question) and add the hits to ``documents``.

    A query already searched in this run is not searched again (the per-run
    cache: same query, same store, same k gives the same hits, which
    ``documents`` already holds); the step records the skip. Otherwise counts
    one retrieval and one hop, and records the query and chunk ids in
    ``steps`` so the reasoning chain shows what was looked up and found.
    """
    ctx = get_context(runtime)
    query = state.get("query") or state["question"]
    if is_repeat(state):
        text = f"query already searched in this run; not searched again: {query}"
        return {"steps": [{"node": "retrieve", "kind": "note", "query": query, "text": text}]}
    emit("retrieve", "start", query=query)
    docs = search(ctx, query)
    ids = [str(d.id) for d in docs]
    emit("retrieve", "end", query=query, doc_ids=ids)
    return {
        "documents": docs,
        "queries": [query],
        "steps": [{"node": "retrieve", "kind": "retrieve", "query": query, "doc_ids": ids}],
        "usage": usage(retrievals=1, hops=1),
    }


def make_retrieve_many(*, fuse: bool = False, with_question: bool = True) -> Callable[..., dict]:
    """Build a node that searches ``subqueries`` (and the question) in one batch.

    ``fuse=False`` keeps the unique union of the hits (multi-query, step-back);
    ``fuse=True`` keeps the top ``k`` of their reciprocal rank fusion
    (RAG-Fusion, ``RagContext.rrf_k``). Queries already searched in this run
    are skipped. One step per query records what it found; the searches count
    as one hop, since they run side by side.
    """

    def retrieve_many(state: RagState, runtime: Runtime[RagContext]) -> dict:
        ctx = get_context(runtime)
        wanted = ([state["question"]] if with_question else []) + list(state.get("subqueries", []))
        wanted = wanted or [state["question"]]  # no usable sub-query: search the question
        searched = {normalize_query(q) for q in state.get("queries", [])}
        queries = []
        for query in wanted:
            if normalize_query(query) not in searched:
                searched.add(normalize_query(query))
                queries.append(query)
        if not queries:
            return {
                "steps": [{"node": "retrieve", "kind": "note", "text": "every query was already searched"}]
            }
        emit("retrieve", "start", queries=queries)
        rankings = search_many(ctx, queries)
        steps = [
            {"node": "retrieve", "kind": "retrieve", "query": q, "doc_ids": [str(d.id) for d in ranking]}
            for q, ranking in zip(queries, rankings, strict=True)
        ]
        if fuse:
            docs = reciprocal_rank_fusion(rankings, k=ctx.rrf_k, top_k=ctx.k)
            scores = ", ".join(f"{d.id}: {d.metadata['rrf_score']:.4f}" for d in docs)
            steps.append({"node": "fuse", "kind": "note", "text": f"RRF k={ctx.rrf_k}: {scores}"})
        else:
            docs = unique_union(rankings)
        emit("retrieve", "end", doc_ids=[str(d.id) for d in docs])
        return {
            "documents": docs,
            "queries": queries,
            "steps": steps,
            "usage": usage(retrievals=len(queries), hops=1),
        }

    return retrieve_many
