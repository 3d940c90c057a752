"""RAG-Fusion (Raudaschl 2023): related queries searched together, fused by reciprocal rank fusion.

    START -> expand -> retrieve_many (RRF) -> generate -> END

Each passage scores ``sum 1 / (rrf_k + rank)`` over the rankings of the
question and the generated queries; the top ``k`` of the fused list, not
the union, go to the answer, so passages that several queries agree on win.

When it pays: like multi_query, when passages several wordings agree on matter more than the union:
only the fused top ``k`` reach the answer.
Cost: two model calls (the queries, the answer) and ``num_queries`` + 1 searches in one batch.
"""

from __future__ import annotations

from langgraph.graph import StateGraph

from rag_graphs.nodes import make_expand, make_generate, make_retrieve_many
from rag_graphs.nodes.builder import compile_method, linear_builder


def build() -> StateGraph:
    """The uncompiled graph."""
    return linear_builder(
        ("expand", make_expand("rag_fusion_queries", name="expand")),
        ("retrieve_many", make_retrieve_many(fuse=True)),
        ("generate", make_generate()),
    )


graph = compile_method(build(), "rag_fusion")
