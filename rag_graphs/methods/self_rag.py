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
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from prompts import load_prompt
from rag_graphs.context import RagContext, get_context
from rag_graphs.methods import compile_method, new_builder
from rag_graphs.nodes import make_generate, make_rewrite, retrieve
from rag_graphs.nodes.common import calls_usage, chat_model, emit, template_inputs
from rag_graphs.nodes.grade import grade
from rag_graphs.nodes.retrieve import last_retrieval_skipped
from rag_graphs.state import RagState
from rag_graphs.structured import invoke_structured


class NeedRetrieval(BaseModel):
    """Whether the question needs facts from the collection."""

    retrieve: bool


class AnswerCheck(BaseModel):
    """Whether the answer is grounded in the passages and answers the question."""

    supported: bool = Field(description="every fact in the answer is in the passages")
    useful: bool = Field(description="the answer answers the question")


_NEED = load_prompt("decide_retrieval")
_CHECK = load_prompt("check_answer")


def need_retrieval(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Decide whether to retrieve at all (default: retrieve)."""
    ctx = get_context(runtime)
    out = invoke_structured(
        chat_model(ctx),
        _NEED.format_messages(question=state["question"]),
        NeedRetrieval,
        NeedRetrieval(retrieve=True),
    )
    emit("need_retrieval", "end", retrieve=out.value.retrieve)
    text = f"retrieve={out.value.retrieve} via {out.method}"
    return {
        "enough": not out.value.retrieve,
        "steps": [{"node": "need_retrieval", "kind": "decide", "text": text}],
        "usage": calls_usage(out.calls),
    }


def check(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Check the answer is supported and useful; stop when it is or the budget is spent."""
    ctx = get_context(runtime)
    messages = _CHECK.format_messages(**template_inputs(_CHECK, state))
    out = invoke_structured(chat_model(ctx), messages, AnswerCheck, AnswerCheck(supported=True, useful=True))
    verdict = out.value
    if verdict.supported and verdict.useful:
        stop = "enough"
    elif last_retrieval_skipped(state):
        stop = "repeated query; keeping the last answer"
    elif len(state.get("queries", [])) >= ctx.max_hops:
        stop = f"hop budget reached ({ctx.max_hops} retrievals); keeping the last answer"
    else:
        stop = ""
    text = f"supported={verdict.supported}; useful={verdict.useful}; via {out.method}"
    steps = [{"node": "check", "kind": "grade", "text": text + (f"; stop: {stop}" if stop else "")}]
    emit("check", "end", supported=verdict.supported, useful=verdict.useful, stop=stop)
    return {"stop_reason": stop, "steps": steps, "usage": calls_usage(out.calls)}


def route_after_need(state: RagState) -> Literal["retrieve", "answer_directly"]:
    """Retrieve unless the model judged the question answerable without documents."""
    return "answer_directly" if state.get("enough") else "retrieve"


def route_after_check(state: RagState) -> Literal["rewrite", "__end__"]:
    """Finish when the check node says stop; otherwise rewrite and retrieve a follow-up."""
    return END if state.get("stop_reason") else "rewrite"


def build() -> StateGraph:
    """The uncompiled graph."""
    builder = new_builder()
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
