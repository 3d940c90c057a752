"""The shared ``decide`` node: is what we gathered enough, and what to search next.

The decision is structured (``Decision``) through ``structured``, so a weak
model's malformed reply falls back to a safe default instead of crashing.
Budgets are enforced here by ``loop_stop``, not by LangGraph's recursion
limit: the node sets ``stop_kind`` (and ``stop_reason``, its words) and the router reads the kind.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from rag_graphs.config.context import RagContext
from rag_graphs.llm.calls import Body
from rag_graphs.llm.structured import structured
from rag_graphs.nodes.chat import calls_usage, chat_model
from rag_graphs.nodes.events import emit, step
from rag_graphs.nodes.inputs import template_inputs
from rag_graphs.nodes.loop import hop_budget, loop_stop, stop_update
from rag_graphs.nodes.model_node import ModelNode
from rag_graphs.prompts import load_prompt
from rag_graphs.state import RagState


class Decision(BaseModel):
    """Whether the gathered information answers the question, else the next search."""

    enough: bool = Field(description="true when the question can be answered now")
    next_query: str = Field(default="", description="search query for the missing fact")


def make_decide(prompt: str = "decide_enough") -> ModelNode:
    """Build a decide node on template ``prompt`` (it sees question, notes, context)."""
    template = load_prompt(prompt)

    def decide(state: RagState, ctx: RagContext) -> Body[dict]:
        messages = template.format_messages(**template_inputs(template, state))
        default = Decision(enough=False, next_query="")
        out = yield from structured(chat_model(ctx), messages, Decision, default)
        decision = out.value
        budget = hop_budget(state, ctx.max_hops)
        stop = loop_stop(state, budget, done=decision.enough, next_query=decision.next_query)
        reason = stop.reason if stop else ""
        text = f"enough={decision.enough}; next_query={decision.next_query!r}; via {out.method}"
        if reason:
            text += f"; stop: {reason}"
        emit("end", enough=decision.enough, next_query=decision.next_query, stop=reason)
        update: dict = {
            **stop_update(stop),
            "steps": [step("decide", query=decision.next_query, text=text)],
            "usage": calls_usage(out.calls),
        }
        if stop is None:
            update["query"] = decision.next_query.strip()
        return update

    return ModelNode(decide, "decide")


decide = make_decide()


def retrieve_until_stopped(state: RagState) -> Literal["retrieve", "generate"]:
    """Router of retrieve loops: search again until a node set ``stop_kind``."""
    return "generate" if state.get("stop_kind") else "retrieve"
