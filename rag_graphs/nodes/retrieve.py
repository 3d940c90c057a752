"""The shared ``retrieve`` node: search the store with the current query."""

from __future__ import annotations

from langgraph.runtime import Runtime

from rag_graphs.context import RagContext, get_context
from rag_graphs.nodes.common import emit
from rag_graphs.retrieval import search
from rag_graphs.state import RagState, usage


def retrieve(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Search with ``state["query"]`` (or the question) and add the hits to ``documents``.

    Counts one retrieval and one hop, and records the query and the chunk ids
    in ``steps`` so the reasoning chain shows what was looked up and found.
    """
    ctx = get_context(runtime)
    query = state.get("query") or state["question"]
    emit("retrieve", "start", query=query)
    docs = search(ctx, query)
    ids = [str(d.id) for d in docs]
    emit("retrieve", "end", query=query, doc_ids=ids)
    return {
        "documents": docs,
        "steps": [{"node": "retrieve", "kind": "retrieve", "query": query, "doc_ids": ids}],
        "usage": usage(retrievals=1, hops=1),
    }
