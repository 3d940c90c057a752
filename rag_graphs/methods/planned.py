"""Planned retrieval path: plan the sub-questions in dependency order, then walk the plan.

    START -> plan -> approve_plan -> next_subquestion -> retrieve -> answer_in_order --(more)--> ...
                                                                                  \\--(done)--> generate

The plan is written once, up front ("Who founded X?", "Where was #1
born?"); walking it fills each ``#n`` with the n-th answer, so a later
search names the bridge entity found by an earlier one. Unlike iterative
methods the path is fixed before the first search; unlike recursive
decomposition the sub-questions say which earlier answers they need.
With ``plan`` in ``RagContext.interrupts`` a person approves or edits the plan first
(``approve_plan``, ``rag_graphs.nodes.interrupts``).

When it pays: bridge chains whose later sub-questions need earlier answers ("Where was #1 born?"),
with a chat model that plans well.
Cost: one planning call, one search and one answer call per sub-question (up to ``num_queries``,
3), plus the answer.
"""

from __future__ import annotations

from langgraph.graph import END, StateGraph

from rag_graphs.nodes import make_expand, make_generate
from rag_graphs.nodes.builder import BEGIN, compile_method, new_builder
from rag_graphs.nodes.interrupts import approve_plan
from rag_graphs.nodes.plan import add_plan_walk


def build() -> StateGraph:
    """The uncompiled graph."""
    builder = new_builder()
    builder.add_node("plan", make_expand("plan_retrieval_path", name="plan"))
    builder.add_node("approve_plan", approve_plan)
    builder.add_node("generate", make_generate("answer_with_notes"))
    builder.add_edge(BEGIN, "plan")
    builder.add_edge("plan", "approve_plan")
    builder.add_edge("approve_plan", add_plan_walk(builder))
    builder.add_edge("generate", END)
    return builder


graph = compile_method(build(), "planned")
