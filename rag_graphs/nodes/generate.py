"""The shared ``generate`` node: answer from the gathered passages, with citations."""

from __future__ import annotations

from collections.abc import Callable

from langgraph.runtime import Runtime

from prompts import load_prompt
from rag_graphs.citations import extract_citations, format_context
from rag_graphs.context import RagContext, get_context
from rag_graphs.nodes.common import call_chat, emit
from rag_graphs.state import RagState


def make_generate(prompt: str = "answer_with_citations") -> Callable[..., dict]:
    """Build a generate node that fills template ``prompt`` with ``context`` and ``question``.

    Methods that need other wording pass another template name; the node logic
    (numbered passages, citation parsing, usage) stays in one place.
    """
    template = load_prompt(prompt)

    def generate(state: RagState, runtime: Runtime[RagContext]) -> dict:
        ctx = get_context(runtime)
        docs = state.get("documents") or []
        messages = template.format_messages(context=format_context(docs), question=state["question"])
        emit("generate", "start", passages=len(docs))
        reply, used = call_chat(ctx, messages)
        answer = str(reply.content).strip()
        citations = extract_citations(answer, docs)
        emit("generate", "end", answer=answer)
        return {
            "answer": answer,
            "citations": citations,
            "steps": [
                {
                    "node": "generate",
                    "kind": "generate",
                    "text": answer,
                    "doc_ids": [c["chunk_id"] for c in citations],
                }
            ],
            "usage": used,
        }

    return generate


generate = make_generate()
