"""The shared ``rewrite`` node: the model writes the next search query."""

from __future__ import annotations

import re
from collections.abc import Callable

from langgraph.runtime import Runtime

from prompts import load_prompt
from rag_graphs.context import RagContext, get_context
from rag_graphs.nodes.common import call_chat, emit, template_inputs
from rag_graphs.state import RagState

_PREFIX = re.compile(r"^\s*(?:next\s+)?(?:search\s+)?(?:query|question)\s*[:\-]\s*", re.IGNORECASE)
MAX_QUERY_CHARS = 300
MAX_PASSAGE_CHARS = 1500


def clean_query(text: str, fallback: str) -> str:
    """The first non-empty line of a model reply, without labels or quotes.

    Small models wrap queries in prefixes ("Search query: ..."), quotes or
    explanations; an empty or runaway reply falls back to ``fallback``.
    """
    for line in text.splitlines():
        line = _PREFIX.sub("", line).strip().strip("\"'`*").strip()
        if line:
            return line if len(line) <= MAX_QUERY_CHARS else fallback
    return fallback


def make_rewrite(prompt: str, *, name: str = "rewrite", passage: bool = False) -> Callable[..., dict]:
    """Build a node that fills template ``prompt`` and stores the reply as ``query``.

    The template may use ``question``, ``notes``, ``query`` and ``context``;
    the node passes those it asks for. Falls back to the question when the
    reply holds no usable query. With ``passage`` (HyDE) the whole reply is
    kept, after the question, as the text to embed and search.
    """
    template = load_prompt(prompt)

    def rewrite(state: RagState, runtime: Runtime[RagContext]) -> dict:
        ctx = get_context(runtime)
        messages = template.format_messages(**template_inputs(template, state))
        reply, used = call_chat(ctx, messages)
        if passage:
            text = " ".join(str(reply.content).split())[:MAX_PASSAGE_CHARS]
            query = f"{state['question']}\n{text}" if text else state["question"]
        else:
            query = clean_query(str(reply.content), fallback=state["question"])
        emit(name, "end", query=query)
        return {
            "query": query,
            "steps": [{"node": name, "kind": "rewrite", "query": query, "text": str(reply.content)}],
            "usage": used,
        }

    rewrite.__name__ = name
    return rewrite
