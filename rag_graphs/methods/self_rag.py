"""Self-RAG (Asai et al. 2023), as a graph of reflection decisions.

    START -> need_retrieval --(no)--> answer_directly -> END
                  \\--(yes)--> retrieve -> grade -> generate -> check
    check --(supported and useful | budget)--> END
          \\--(unsupported or not useful)--> rewrite -> retrieve ...

Each reflection token of the paper is a structured decision here
(retrieve?, is this passage relevant?, is the answer supported?, useful?).
Unparseable decisions default to the choice that cannot loop: retrieve, keep
the passage (ambiguous), accept the answer. Retrieval is bounded by
``max_hops``; on exhaustion the last answer stands and ``steps`` says so.
"""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, Field

from prompts import load_prompt
from rag_graphs.calls import Body
from rag_graphs.context import RagContext
from rag_graphs.methods import compile_method, new_builder
from rag_graphs.nodes import make_generate, make_rewrite, retrieve
from rag_graphs.nodes.common import calls_usage, chat_model, emit, model_node, step, template_inputs
from rag_graphs.nodes.grade import grade
from rag_graphs.nodes.loop import ENOUGH, hop_budget, loop_stop
from rag_graphs.state import RagState
from rag_graphs.structured import structured


class NeedRetrieval(BaseModel):
    """Whether the question needs facts from the collection."""

    retrieve: bool


class AnswerCheck(BaseModel):
    """Whether the answer is grounded in the passages and answers the question."""

    supported: bool = Field(description="every fact in the answer is in the passages")
    useful: bool = Field(description="the answer answers the question")


_NEED = load_prompt("decide_retrieval")
_CHECK = load_prompt("check_answer")


class SelfRagState(RagState, total=False):
    needs_retrieval: bool  # the first reflection: does the question need the collection at all


@model_node
def need_retrieval(state: SelfRagState, ctx: RagContext) -> Body[dict]:
    """Decide whether to retrieve at all (default: retrieve)."""
    messages = _NEED.format_messages(question=state["question"])
    out = yield from structured(chat_model(ctx), messages, NeedRetrieval, NeedRetrieval(retrieve=True))
    emit("end", retrieve=out.value.retrieve)
    return {
        "needs_retrieval": out.value.retrieve,
        "steps": [step("decide", text=f"retrieve={out.value.retrieve} via {out.method}")],
        "usage": calls_usage(out.calls),
    }


@model_node
def check(state: SelfRagState, ctx: RagContext) -> Body[dict]:
    """Check the answer is supported and useful; stop when it is or the loop must stop."""
    messages = _CHECK.format_messages(**template_inputs(_CHECK, state))
    default = AnswerCheck(supported=True, useful=True)
    out = yield from structured(chat_model(ctx), messages, AnswerCheck, default)
    verdict = out.value
    stop = loop_stop(state, hop_budget(state, ctx.max_hops), done=verdict.supported and verdict.useful)
    if stop and stop != ENOUGH:
        stop += "; keeping the last answer"
    text = f"supported={verdict.supported}; useful={verdict.useful}; via {out.method}"
    emit("end", supported=verdict.supported, useful=verdict.useful, stop=stop)
    return {
        "stop_reason": stop,
        "steps": [step("grade", text=text + (f"; stop: {stop}" if stop else ""))],
        "usage": calls_usage(out.calls),
    }


def route_after_need(state: SelfRagState) -> Literal["retrieve", "answer_directly"]:
    """Retrieve unless the model judged the question answerable without documents."""
    return "retrieve" if state.get("needs_retrieval", True) else "answer_directly"


def route_after_check(state: SelfRagState) -> Literal["rewrite", "__end__"]:
    """Finish when the check node says stop; otherwise rewrite and retrieve a follow-up."""
    return "__end__" if state.get("stop_reason") else "rewrite"


def build() -> StateGraph:
    """The uncompiled graph."""
    builder = new_builder(SelfRagState)
    builder.add_node("need_retrieval", need_retrieval)
    builder.add_node("answer_directly", make_generate("answer_directly"))
    builder.add_node("retrieve", retrieve)
    builder.add_node("grade", grade)
    builder.add_node("generate", make_generate())
    builder.add_node("check", check)
    builder.add_node("rewrite", make_rewrite("rewrite_for_search"))
    builder.add_edge(START, "need_retrieval")
    builder.add_conditional_edges("need_retrieval", route_after_need)
    builder.add_edge("answer_directly", END)
    builder.add_edge("retrieve", "grade")
    builder.add_edge("grade", "generate")
    builder.add_edge("generate", "check")
    builder.add_conditional_edges("check", route_after_check)
    builder.add_edge("rewrite", "retrieve")
    return builder


graph = compile_method(build(), "self_rag")
