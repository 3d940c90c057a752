"""Walking a list of sub-questions in order: the loop of recursive decomposition and planned paths.

A plan is ``state["subqueries"]``; each pass takes the next sub-question,
fills ``#1``, ``#2`` ... with the answers found so far (so "Where was #1
born?" becomes "Where was Ilsa Brandt born?"), retrieves for it and answers
it. The plan's length (capped by ``RagContext.num_queries``) bounds the loop.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from langgraph.graph import StateGraph

from rag_graphs.nodes.events import emit, step
from rag_graphs.nodes.generate import make_intermediate
from rag_graphs.nodes.retrieve import retrieve
from rag_graphs.state import RagState

ANSWER_NODE = "answer_in_order"
_REFERENCE = re.compile(r"#(\d+)")


def answers_so_far(state: RagState) -> list[str]:
    """The sub-answers written so far, in plan order."""
    return [a["answer"] for a in state.get("sub_answers", [])]


def fill_references(subquestion: str, answers: list[str]) -> str:
    """Replace ``#n`` with the n-th answer (left as is when that answer does not exist yet)."""

    def value(match: re.Match) -> str:
        n = int(match.group(1))
        return answers[n - 1].rstrip(".") if 1 <= n <= len(answers) else match.group(0)

    return _REFERENCE.sub(value, subquestion)


def next_subquestion(state: RagState) -> dict:
    """Make the next sub-question of the plan the pending ``query`` (the question if no plan)."""
    plan = state.get("subqueries") or [state["question"]]
    answers = answers_so_far(state)
    query = fill_references(plan[len(answers)], answers)
    emit("end", query=query)
    return {"query": query, "steps": [step("rewrite", query=query)]}


def route_plan(state: RagState) -> Literal["next_subquestion", "generate"]:
    """The next sub-question until every one of the plan is answered."""
    plan = state.get("subqueries") or [state["question"]]
    return "next_subquestion" if len(answers_so_far(state)) < len(plan) else "generate"


def add_plan_walk(builder: StateGraph[Any, Any, Any, Any]) -> str:
    """Add the loop that walks the plan to a method's builder (``rag_graphs.nodes.builder.new_builder``,
    which wraps the nodes), ending at a ``generate`` node the caller adds.

        next_subquestion -> retrieve -> answer_in_order --(more)--> next_subquestion
                                                      \\--(done)--> generate

    Returns the loop's entry node name, for the caller's edge into it.
    """
    builder.add_node("next_subquestion", next_subquestion)
    builder.add_node("retrieve", retrieve)
    builder.add_node(ANSWER_NODE, make_intermediate("intermediate_with_background", name=ANSWER_NODE))
    builder.add_edge("next_subquestion", "retrieve")
    builder.add_edge("retrieve", ANSWER_NODE)
    builder.add_conditional_edges(ANSWER_NODE, route_plan)
    return "next_subquestion"
