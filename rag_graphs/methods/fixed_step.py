"""Fixed-step multi-hop RAG: a fixed number of retrieve -> intermediate-answer hops.

    START -> first_query -> retrieve -> intermediate --(hops left)--> next_query -> retrieve ...
                                                 \\--(RagContext.fixed_hops done)--> generate -> END

Hop 1 searches for the first fact the question depends on; each later hop
writes its query from the intermediate answers so far (the bridge entity);
the answer uses every passage and every intermediate answer.

When it pays: bridge questions with a known number of hops (find X, then X's property).
Cost: ``fixed_hops`` (2) searches and two model calls per hop (query, intermediate answer), plus
the answer: 5 calls at 2 hops.
"""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END, StateGraph
from langgraph.runtime import Runtime

from rag_graphs.config.context import RagContext
from rag_graphs.config.runtime import get_context
from rag_graphs.nodes import make_generate, make_intermediate, make_rewrite, retrieve
from rag_graphs.nodes.builder import BEGIN, compile_method, new_builder
from rag_graphs.state import RagState


def route_after_hop(state: RagState, runtime: Runtime[RagContext]) -> Literal["next_query", "generate"]:
    """Another hop until ``fixed_hops`` intermediate answers were written (skipped repeats count too)."""
    return "next_query" if len(state.get("sub_answers", [])) < get_context(runtime).fixed_hops else "generate"


def build() -> StateGraph:
    """The uncompiled graph."""
    builder = new_builder()
    builder.add_node("first_query", make_rewrite("first_subquestion", name="first_query"))
    builder.add_node("retrieve", retrieve)
    builder.add_node("intermediate", make_intermediate())
    builder.add_node("next_query", make_rewrite("next_query", name="next_query"))
    builder.add_node("generate", make_generate("answer_with_notes"))
    builder.add_edge(BEGIN, "first_query")
    builder.add_edge("first_query", "retrieve")
    builder.add_edge("retrieve", "intermediate")
    builder.add_conditional_edges("intermediate", route_after_hop)
    builder.add_edge("next_query", "retrieve")
    builder.add_edge("generate", END)
    return builder


graph = compile_method(build(), "fixed_step")
