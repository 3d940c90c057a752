"""The shared generate nodes: the final answer with citations, and intermediate answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from prompts import load_prompt
from rag_graphs.answers import ANSWER_STOPS, UNKNOWN, clean_answer
from rag_graphs.calls import Body, Call
from rag_graphs.citations import extract_citations, format_context
from rag_graphs.context import RagContext
from rag_graphs.nodes.common import (
    ModelNode,
    answer_documents,
    chat_model,
    demonstrations_input,
    emit,
    latest_documents,
    llm_usage,
    step,
    template_inputs,
)
from rag_graphs.nodes.loop import ENOUGH, SINGLE_PASS
from rag_graphs.state import RagState, Step, Usage


def answer_call(ctx: RagContext, messages: list[BaseMessage]) -> Body[tuple[AIMessage, Usage]]:
    """One answer call: the chat model with ``ANSWER_STOPS``, so it stops where small models
    start inventing the prompt's next turn (``clean_answer`` cuts whatever still gets through)."""
    reply = yield Call(chat_model(ctx).bind(stop=ANSWER_STOPS), messages)
    return reply, llm_usage(reply)


def _stop_note(state: RagState) -> list[Step]:
    reason = state.get("stop_reason")
    if not reason or reason == ENOUGH:
        return []
    return [step("note", text=f"answering from what was gathered: {reason}")]


def make_generate(
    prompt: str = "answer_with_citations", *, notes: Callable[[Any], str] | None = None
) -> ModelNode:
    """Build a generate node that answers from all gathered passages with template ``prompt``.

    Methods that need other wording pass another template name (for example
    one that also shows intermediate answers as ``{notes}``); ``notes`` renders
    a method's own notes instead (IRCoT's chain of thought, ReAct's scratchpad).
    The node logic (numbered passages, citation parsing, usage, the budget
    note) stays here.
    """
    template = load_prompt(prompt)

    def generate(state: RagState, ctx: RagContext) -> Body[dict]:
        docs = answer_documents(state)
        extra = demonstrations_input(template, ctx) | ({"notes": notes(state)} if notes else {})
        messages = template.format_messages(**template_inputs(template, state, **extra))
        emit("start", passages=len(docs))
        reply, used = yield from answer_call(ctx, messages)
        answer = clean_answer(str(reply.content))
        citations = extract_citations(answer, docs)
        emit("end", answer=answer)
        answered = step("generate", text=answer, doc_ids=[c["chunk_id"] for c in citations])
        return {
            "answer": answer,
            "citations": citations,
            "steps": [*_stop_note(state), answered],
            "usage": used,
            # Every output says why the run stopped looking; a method without a loop made one pass.
            "stop_reason": state.get("stop_reason") or SINGLE_PASS,
        }

    return ModelNode(generate, "generate")


def make_intermediate(prompt: str = "intermediate_answer", *, name: str = "intermediate") -> ModelNode:
    """Build a node that answers the current query from the latest retrieval only.

    Its one-sentence answer is appended to ``sub_answers`` (query, answer), so
    the next query and the final answer can build on it (the bridge entity of
    a multi-hop question).
    """
    template = load_prompt(prompt)

    def intermediate(state: RagState, ctx: RagContext) -> Body[dict]:
        docs = latest_documents(state)
        query = state.get("query") or state["question"]
        inputs = template_inputs(template, state, context=format_context(docs), query=query)
        reply, used = yield from answer_call(ctx, template.format_messages(**inputs))
        text = clean_answer(str(reply.content))
        answer = text.splitlines()[0] if text != UNKNOWN else "unknown"
        emit("end", query=query, answer=answer)
        return {
            "sub_answers": [{"query": query, "answer": answer}],
            "steps": [step("generate", query=query, text=answer, doc_ids=[str(d.id) for d in docs])],
            "usage": used,
        }

    return ModelNode(intermediate, name)


generate = make_generate()
