"""The shared ``rewrite`` node: the model writes the next search query."""

from __future__ import annotations

import re

from prompts import load_prompt
from rag_graphs.calls import Body
from rag_graphs.context import RagContext
from rag_graphs.nodes.common import ModelNode, chat, emit, step, template_inputs
from rag_graphs.state import RagState

_PREFIX = re.compile(r"^\s*(?:next\s+)?(?:search\s+)?(?:query|question)\s*[:\-]\s*", re.IGNORECASE)
MAX_QUERY_CHARS = 300


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


def make_rewrite(prompt: str, *, name: str = "rewrite") -> ModelNode:
    """Build a node that fills template ``prompt`` and stores the reply as the next ``query``.

    The template may use ``question``, ``notes``, ``query`` and ``context``;
    the node passes those it asks for. Falls back to the question when the
    reply holds no usable query.
    """
    template = load_prompt(prompt)

    def rewrite(state: RagState, ctx: RagContext) -> Body[dict]:
        messages = template.format_messages(**template_inputs(template, state))
        reply, used = yield from chat(ctx, messages)
        query = clean_query(str(reply.content), fallback=state["question"])
        emit("end", query=query)
        return {
            "query": query,
            "steps": [step("rewrite", query=query, text=str(reply.content))],
            "usage": used,
        }

    return ModelNode(rewrite, name)
