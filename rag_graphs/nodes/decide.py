"""The shared ``decide`` node: is what we gathered enough, and what to search next.

The decision is structured (``Decision``) through ``structured``, so a weak
model's malformed reply falls back to a safe default instead of crashing.
Budgets are enforced here by ``loop_stop``, not by LangGraph's recursion
limit: the node sets ``stop_kind`` (and ``stop_reason``, its words) and the router reads the kind.

Who says "enough" is ``RagContext.stop_rule``: the model alone, or (``reader``; ``auto`` on the
extract reader's path) first the reader, which reads the gathered passages and stops the loop
without a model call when it finds an answer with at least ``STOP_CONFIDENCE``; only otherwise is
the model asked, as under ``model``. The model's own word is not dropped: SmolLM2-135M says
"enough" to every question and proposes echoes of its instructions as the next query ("search
query for the missing fact"), so a loop that ignored its "enough" would search those (issue 51,
BENCHMARKS.md "Stop on the reader's confidence").
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from rag_graphs.config.context import RagContext
from rag_graphs.llm.calls import Body
from rag_graphs.llm.structured import structured
from rag_graphs.nodes.chat import calls_usage, chat_model
from rag_graphs.nodes.events import emit, step
from rag_graphs.nodes.inputs import answer_documents, template_inputs
from rag_graphs.nodes.loop import hop_budget, loop_stop, stop_update
from rag_graphs.nodes.model_node import ModelNode
from rag_graphs.nodes.reading import is_extract
from rag_graphs.prompts import load_prompt
from rag_graphs.search.retrieval import embeddings_for
from rag_graphs.state import RagState
from rag_graphs.text.reader import read

STOP_CONFIDENCE = 0.8
"""Least confidence of the extract reader's answer on the gathered passages that ends the loop
under the ``reader`` stop rule: fitted on the tune halves of 2Wiki and MuSiQue (BENCHMARKS.md,
"Stop on the reader's confidence")."""


class Decision(BaseModel):
    """Whether the gathered information answers the question, else the next search."""

    enough: bool = Field(description="true when the question can be answered now")
    next_query: str = Field(default="", description="search query for the missing fact")


def stops_by_reader(ctx: RagContext) -> bool:
    """True when the reader, not the model, says "enough" (``RagContext.stop_rule`` resolved)."""
    return ctx.stop_rule == "reader" or (ctx.stop_rule == "auto" and is_extract(ctx))


def answer_found(state: RagState, ctx: RagContext) -> tuple[bool, str]:
    """Whether the extract reader finds an answer of at least ``STOP_CONFIDENCE`` in the
    passages gathered so far (the ones the final answer reads), and what it read."""
    docs = answer_documents(state)
    if not docs:
        return False, "reader: no passages"
    reading = read(state["question"], docs, embeddings=embeddings_for(ctx))
    if reading.no_evidence:
        return False, f"reader: {reading.reason}"
    found = reading.confidence >= STOP_CONFIDENCE
    sign = ">=" if found else "<"
    return found, f"reader: {reading.answer!r}, confidence {reading.confidence:.2f} {sign} {STOP_CONFIDENCE}"


def make_decide(prompt: str = "decide_enough") -> ModelNode:
    """Build a decide node on template ``prompt`` (it sees question, notes, context)."""
    template = load_prompt(prompt)

    def decide(state: RagState, ctx: RagContext) -> Body[dict]:
        found, read_note = answer_found(state, ctx) if stops_by_reader(ctx) else (False, "")
        if found:  # the reader has the answer: no model call
            decision, via, calls = Decision(enough=True), "reader", []
        else:
            messages = template.format_messages(**template_inputs(template, state))
            default = Decision(enough=False, next_query="")
            out = yield from structured(chat_model(ctx), messages, Decision, default)
            decision, via, calls = out.value, out.method, out.calls
        budget = hop_budget(state, ctx.max_hops)
        stop = loop_stop(state, budget, done=decision.enough, next_query=decision.next_query)
        reason = stop.reason if stop else ""
        text = f"enough={decision.enough}; next_query={decision.next_query!r}; via {via}"
        if read_note:
            text += f"; {read_note}"
        if reason:
            text += f"; stop: {reason}"
        emit("end", enough=decision.enough, next_query=decision.next_query, stop=reason)
        update: dict = {
            **stop_update(stop),
            "steps": [step("decide", query=decision.next_query, text=text)],
            "usage": calls_usage(calls),
        }
        if stop is None:
            update["query"] = decision.next_query.strip()
        return update

    return ModelNode(decide, "decide")


decide = make_decide()


def retrieve_until_stopped(state: RagState) -> Literal["retrieve", "generate"]:
    """Router of retrieve loops: search again until a node set ``stop_kind``."""
    return "generate" if state.get("stop_kind") else "retrieve"
