"""The shared generate nodes: the final answer with citations, and intermediate answers."""

from __future__ import annotations

from collections.abc import Callable

from langgraph.runtime import Runtime

from prompts import load_prompt
from rag_graphs.citations import extract_citations, format_context
from rag_graphs.context import RagContext, get_context
from rag_graphs.nodes.common import (
    answer_documents,
    call_chat,
    demonstrations_input,
    emit,
    latest_documents,
    template_inputs,
)
from rag_graphs.state import RagState


def _stop_note(state: RagState) -> list[dict]:
    reason = state.get("stop_reason")
    if not reason or reason == "enough":
        return []
    text = f"answering from what was gathered: {reason}"
    return [{"node": "generate", "kind": "note", "text": text}]


def make_generate(prompt: str = "answer_with_citations") -> Callable[..., dict]:
    """Build a generate node that answers from all gathered passages with template ``prompt``.

    Methods that need other wording pass another template name (for example
    one that also shows intermediate answers as ``{notes}``); the node logic
    (numbered passages, citation parsing, usage, the budget note) stays here.
    """
    template = load_prompt(prompt)

    def generate(state: RagState, runtime: Runtime[RagContext]) -> dict:
        ctx = get_context(runtime)
        docs = answer_documents(state)
        messages = template.format_messages(
            **template_inputs(template, state, **demonstrations_input(template, ctx))
        )
        emit("generate", "start", passages=len(docs))
        reply, used = call_chat(ctx, messages)
        answer = str(reply.content).strip()
        citations = extract_citations(answer, docs)
        emit("generate", "end", answer=answer)
        step = {
            "node": "generate",
            "kind": "generate",
            "text": answer,
            "doc_ids": [c["chunk_id"] for c in citations],
        }
        return {
            "answer": answer,
            "citations": citations,
            "steps": [*_stop_note(state), step],
            "usage": used,
        }

    return generate


def make_intermediate(
    prompt: str = "intermediate_answer", *, name: str = "intermediate"
) -> Callable[..., dict]:
    """Build a node that answers the current query from the latest retrieval only.

    Its one-sentence answer is appended to ``notes`` as ``query -> answer``, so
    the next query and the final answer can build on it (the bridge entity of
    a multi-hop question).
    """
    template = load_prompt(prompt)

    def intermediate(state: RagState, runtime: Runtime[RagContext]) -> dict:
        ctx = get_context(runtime)
        docs = latest_documents(state)
        query = state.get("query") or state["question"]
        inputs = template_inputs(template, state, context=format_context(docs), query=query)
        reply, used = call_chat(ctx, template.format_messages(**inputs))
        answer = str(reply.content).strip().splitlines()[0] if str(reply.content).strip() else "unknown"
        emit(name, "end", query=query, answer=answer)
        return {
            "notes": [f"{query} -> {answer}"],
            "steps": [
                {
                    "node": name,
                    "kind": "generate",
                    "query": query,
                    "text": answer,
                    "doc_ids": [str(d.id) for d in docs],
                }
            ],
            "usage": used,
        }

    intermediate.__name__ = name
    return intermediate


generate = make_generate()
