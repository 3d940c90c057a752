"""Multi-query retrieval: several rewrites of the question, searched together, unique union.

    START -> expand -> retrieve_many -> generate -> END

The model writes ``RagContext.num_queries`` queries from different angles;
they and the question are searched in one batch, and every distinct passage
found goes to the answer (LangChain's MultiQueryRetriever, as a graph).

When it pays: ambiguous questions and vocabulary mismatch: several wordings find passages one
wording misses, and every one reaches the answer.
Cost: two model calls (the rewrites, the answer) and ``num_queries`` + 1 searches in one batch; a
longer answer prompt.
"""

from __future__ import annotations

from langgraph.graph import StateGraph

from rag_graphs.nodes import make_expand, make_generate, make_retrieve_many
from rag_graphs.nodes.builder import compile_method, linear_builder


def build() -> StateGraph:
    """The uncompiled graph."""
    return linear_builder(
        ("expand", make_expand("multi_query", name="expand")),
        ("retrieve_many", make_retrieve_many()),
        ("generate", make_generate()),
    )


graph = compile_method(build(), "multi_query")
