"""The shared ``retrieve`` node: search the store with the current query."""

from __future__ import annotations

from langgraph.runtime import Runtime

from rag_graphs.context import RagContext, get_context
from rag_graphs.nodes.common import emit
from rag_graphs.retrieval import search
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
