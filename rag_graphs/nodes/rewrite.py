"""The shared ``rewrite`` node: the model writes the next search query."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from rag_graphs.config.context import RagContext
from rag_graphs.llm.calls import Body
from rag_graphs.nodes.chat import chat
from rag_graphs.nodes.events import emit, step
from rag_graphs.nodes.inputs import template_inputs
from rag_graphs.nodes.model_node import ModelNode
from rag_graphs.prompts import load_prompt
from rag_graphs.state import RagState

_PREFIX = re.compile(
    r"^\s*(?:(?:next|better|new|rewritten|improved)\s+)?(?:search\s+)?(?:query|question)\s*[:\-]\s*",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W_]{4,}")  # content words: short function words say nothing about an echo
MAX_QUERY_CHARS = 300
ECHO_SHARE = 0.6
"""A line whose content words are at least this share the prompt's own instructions is an echo."""


def content_words(text: str) -> set[str]:
    """The lower-cased words of four letters or more in ``text``."""
    return {w.lower() for w in _WORD.findall(text)}


def echoes(line: str, instructions: set[str]) -> bool:
    """True when ``line`` repeats the prompt's own words instead of naming what to search.

    Small models copy the instruction they were given ("The earlier search found
    nothing useful. Use other words, ...") as their query; searching it finds
    noise. ``instructions`` holds the prompt's words that are not in its inputs,
    so a query that reuses the question's own words is never an echo.
    """
    words = [w.lower() for w in _WORD.findall(line)]
    if len(words) < 3 or not instructions:
        return False
    return sum(w in instructions for w in words) / len(words) >= ECHO_SHARE


def clean_query(text: str, fallback: str, *, instructions: set[str] | frozenset[str] = frozenset()) -> str:
    """The first usable line of a model reply, without labels or quotes.

    Small models wrap queries in prefixes ("Search query: ..."), quotes or
    explanations, or repeat the prompt (a line that ``echoes`` ``instructions``
    is skipped); an empty or runaway reply falls back to ``fallback``.
    """
    for line in text.splitlines():
        line = _PREFIX.sub("", line).strip().strip("\"'`*").strip()
        if line and not echoes(line, set(instructions)):
            return line if len(line) <= MAX_QUERY_CHARS else fallback
    return fallback


def make_rewrite(
    prompt: str, *, name: str = "rewrite", extra: Callable[[Any], dict[str, str]] | None = None
) -> ModelNode:
    """Build a node that fills template ``prompt`` and stores the reply as the next ``query``.

    The template may use ``question``, ``notes``, ``query``, ``context`` and
    ``answer``; the node passes those it asks for, and what ``extra(state)``
    renders for the rest (Self-RAG's verdict on the answer so far). Falls back to the question when the
    reply holds no usable query, or only lines repeating the prompt's instructions.
    """
    template = load_prompt(prompt)

    def rewrite(state: RagState, ctx: RagContext) -> Body[dict]:
        inputs = template_inputs(template, state, **(extra(state) if extra else {}))
        messages = template.format_messages(**inputs)
        # the instructions' words as this run words them (RagContext.prompts may replace them)
        blank = template.format_messages(**dict.fromkeys(template.input_variables, ""))
        own_words = content_words(" ".join(str(m.content) for m in blank))
        reply, used = yield from chat(ctx, messages)
        instructions = own_words - content_words(" ".join(inputs.values()))
        query = clean_query(str(reply.content), fallback=state["question"], instructions=instructions)
        emit("end", query=query)
        return {
            "query": query,
            "steps": [step("rewrite", query=query, text=str(reply.content))],
            "usage": used,
        }

    return ModelNode(rewrite, name)
