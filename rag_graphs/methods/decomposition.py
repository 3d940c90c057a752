"""Query decomposition: sub-questions answered one by one, then one answer synthesised.

    START -> decompose -> approve_plan
    approve_plan --(parallel)--> retrieve_many -> answer_parallel (one Send each) -> generate
                 \\--(recursive)--> next_subquestion -> retrieve -> answer_in_order --(more)--> ...
                                                                            \\--(done)--> generate

``RagContext.decomposition_mode`` picks the mode. Parallel: the sub-questions
are searched in one batch and answered independently, side by side (LangGraph
``Send``). Recursive: in order, each answered with the earlier sub-questions
and answers as background. The final answer sees every sub-answer and passage.
With ``plan`` in ``RagContext.interrupts`` a person approves or edits the sub-questions
before any is searched (``approve_plan``: before the ``Send`` fan-out, so resuming runs
each branch once).

When it pays: comparisons and multi-part questions (parallel), or chains (recursive), with a chat
model that writes good sub-questions.
Cost: one call to decompose, one search and one answer call per sub-question (up to
``num_queries``, 3), one call to synthesise.
"""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from rag_graphs.config.context import RagContext
from rag_graphs.config.runtime import get_context
from rag_graphs.nodes import make_expand, make_generate, make_intermediate, make_retrieve_many
from rag_graphs.nodes.builder import BEGIN, compile_method, new_builder
from rag_graphs.nodes.interrupts import approve_plan
from rag_graphs.nodes.plan import add_plan_walk
from rag_graphs.state import RagState


def route_mode(state: RagState, runtime: Runtime[RagContext]) -> Literal["retrieve_many", "next_subquestion"]:
    """The mode the context asks for."""
    return "retrieve_many" if get_context(runtime).decomposition_mode == "parallel" else "next_subquestion"


def fan_out(state: RagState) -> list[Send] | Literal["generate"]:
    """One ``answer_parallel`` task per sub-question searched, with that search's passages."""
    by_id = {d.id: d for d in state.get("documents", [])}
    sends = []
    for search in state.get("searches", []):
        ids = [i for i in search["doc_ids"] if i in by_id]
        payload = {
            "question": state["question"],
            "query": search["query"],
            "documents": [by_id[i] for i in ids],
            "latest": ids,
        }
        sends.append(Send("answer_parallel", payload))
    return sends or "generate"


def build() -> StateGraph:
    """The uncompiled graph."""
    builder = new_builder()
    builder.add_node("decompose", make_expand("decompose_question", name="decompose"))
    builder.add_node("approve_plan", approve_plan)
    builder.add_node("retrieve_many", make_retrieve_many(with_question=False))
    builder.add_node("answer_parallel", make_intermediate(name="answer_parallel"))
    builder.add_node("generate", make_generate("answer_with_notes"))
    builder.add_edge(BEGIN, "decompose")
    builder.add_edge("decompose", "approve_plan")
    builder.add_conditional_edges("approve_plan", route_mode, ["retrieve_many", add_plan_walk(builder)])
    builder.add_conditional_edges("retrieve_many", fan_out, ["answer_parallel", "generate"])
    builder.add_edge("answer_parallel", "generate")
    builder.add_edge("generate", END)
    return builder


graph = compile_method(build(), "decomposition")
