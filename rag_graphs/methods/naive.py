"""Naive RAG: one retrieval with the question, then an answer with citations.

    START -> retrieve -> generate -> END

The baseline every multi-hop method is compared against.

When it pays: single-hop questions one passage answers; the baseline every other method must beat.
Cost: one search and one model call (the answer).
"""

from __future__ import annotations

from langgraph.graph import END, StateGraph

from rag_graphs.nodes import generate, retrieve
from rag_graphs.nodes.builder import BEGIN, compile_method, new_builder


def build() -> StateGraph:
    """The uncompiled graph (compile it with your own checkpointer if you need one)."""
    builder = new_builder()
    builder.add_node("retrieve", retrieve)
    builder.add_node("generate", generate)
    builder.add_edge(BEGIN, "retrieve")
    builder.add_edge("retrieve", "generate")
    builder.add_edge("generate", END)
    return builder


graph = compile_method(build(), "naive")
