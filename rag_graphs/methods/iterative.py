"""Iterative retrieval: retrieve, then decide whether it is enough or what to search next.

    START -> retrieve -> intermediate -> decide --(next query)--> retrieve ...
                                              \\--(enough | budget | repeat)--> generate -> END

The loop is bounded by ``RagContext.max_hops`` retrievals and stops on a
repeated query; the decide node records why it stopped, and the answer says
in ``steps`` when it was forced by the budget.
"""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END, START, StateGraph

from rag_graphs.context import RagContext
from rag_graphs.nodes import decide, make_generate, make_intermediate, retrieve
from rag_graphs.state import InputState, OutputState, RagState


def route_after_decide(state: RagState) -> Literal["retrieve", "generate"]:
    """Search again only while the decide node found no reason to stop."""
    return "generate" if state.get("stop_reason") else "retrieve"


def build() -> StateGraph:
    """The uncompiled graph."""
    builder = StateGraph(
        RagState, context_schema=RagContext, input_schema=InputState, output_schema=OutputState
    )
    builder.add_node("retrieve", retrieve)
    builder.add_node("intermediate", make_intermediate())
    builder.add_node("decide", decide)
    builder.add_node("generate", make_generate("answer_with_notes"))
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "intermediate")
    builder.add_edge("intermediate", "decide")
    builder.add_conditional_edges("decide", route_after_decide)
    builder.add_edge("generate", END)
    return builder


graph = build().compile(name="iterative")
