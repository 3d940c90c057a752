"""The shared ``decide`` node: is what we gathered enough, and what to search next.

The decision is structured (``Decision``) through ``invoke_structured``, so a
weak model's malformed reply falls back to a safe default instead of crashing.
Budgets are enforced here, not by LangGraph's recursion limit: the node sets
``stop_reason`` and the method's router only reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from prompts import load_prompt
from rag_graphs.context import RagContext, get_context
from rag_graphs.nodes.common import calls_usage, chat_model, emit, template_inputs
from rag_graphs.nodes.retrieve import normalize_query
from rag_graphs.state import RagState
from rag_graphs.structured import invoke_structured


class Decision(BaseModel):
    """Whether the gathered information answers the question, else the next search."""

    enough: bool = Field(description="true when the question can be answered now")
    next_query: str = Field(default="", description="search query for the missing fact")


def stop_reason(state: RagState, ctx: RagContext, decision: Decision) -> str:
    """Why the loop must stop now ('' to go on): enough, budget or a repeated query."""
    if decision.enough:
        return "enough"
    if len(state.get("queries", [])) >= ctx.max_hops:
        return f"hop budget reached ({ctx.max_hops} retrievals)"
    if not decision.next_query.strip():
        return "no next query proposed"
    searched = {normalize_query(q) for q in state.get("queries", [])}
    if normalize_query(decision.next_query) in searched:
        return f"repeated query: {decision.next_query}"
    return ""


def make_decide(prompt: str = "decide_enough") -> Callable[..., dict]:
    """Build a decide node on template ``prompt`` (it sees question, notes, context)."""
    template = load_prompt(prompt)

    def decide(state: RagState, runtime: Runtime[RagContext]) -> dict:
        ctx = get_context(runtime)
        messages = template.format_messages(**template_inputs(template, state))
        default = Decision(enough=False, next_query="")
        out = invoke_structured(chat_model(ctx), messages, Decision, default)
        decision = out.value
        reason = stop_reason(state, ctx, decision)
        text = f"enough={decision.enough}; next_query={decision.next_query!r}; via {out.method}"
        if reason:
            text += f"; stop: {reason}"
        emit("decide", "end", enough=decision.enough, next_query=decision.next_query, stop=reason)
        update: dict = {
            "enough": decision.enough,
            "stop_reason": reason,
            "steps": [{"node": "decide", "kind": "decide", "query": decision.next_query, "text": text}],
            "usage": calls_usage(out.calls),
        }
        if not reason:
            update["query"] = decision.next_query.strip()
        return update

    return decide


decide = make_decide()


def retrieve_until_stopped(state: RagState) -> Literal["retrieve", "generate"]:
    """Router of retrieve loops: search again until a node set ``stop_reason``."""
    return "generate" if state.get("stop_reason") else "retrieve"
