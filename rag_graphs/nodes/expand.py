"""The shared ``expand`` node: the model writes several queries (rewrites, sub-questions, a plan).

It is the rewrite role for methods that fan out: multi-query, RAG-Fusion,
step-back, decomposition and planned paths differ only in the prompt file.
"""

from __future__ import annotations

import re

from rag_graphs.config.context import RagContext
from rag_graphs.llm.calls import Body
from rag_graphs.nodes.chat import chat
from rag_graphs.nodes.events import emit, step
from rag_graphs.nodes.inputs import template_inputs
from rag_graphs.nodes.model_node import ModelNode
from rag_graphs.nodes.rewrite import clean_query
from rag_graphs.prompts import load_prompt
from rag_graphs.search.cache import normalise
from rag_graphs.state import RagState

_BULLET = re.compile(r"^\s*(?:[-*•]+|\(?\d+[.):]|q\d+[.):]|step\s*\d+[.):])\s*", re.IGNORECASE)


def parse_queries(text: str, *, question: str, limit: int | None = None) -> list[str]:
    """Up to ``limit`` (default: all) distinct queries from a reply, one per line.

    Strips bullets, numbering and labels; drops blank lines, repeats and the
    question itself (every fan-out method searches the question anyway).
    """
    seen = {normalise(question)}
    out = []
    for line in text.splitlines():
        query = clean_query(_BULLET.sub("", line), fallback="")
        key = normalise(query)
        if query and key not in seen:
            seen.add(key)
            out.append(query)
    return out[:limit] if limit is not None else out


def make_expand(prompt: str, *, name: str, limit: int | None = None) -> ModelNode:
    """Build a node that fills template ``prompt`` and stores the parsed lines as ``subqueries``.

    ``limit`` caps the lines kept (default ``RagContext.num_queries``); a
    template asking for ``{n}`` gets that number, so the prompt never asks for
    more than the cap keeps, and lines past the cap are named in the step, not
    dropped silently. A reply with no usable line leaves ``subqueries`` empty
    and the method searches the question alone.
    """
    template = load_prompt(prompt)

    def expand(state: RagState, ctx: RagContext) -> Body[dict]:
        cap = limit or ctx.num_queries
        inputs = template_inputs(
            template, state, **({"n": str(cap)} if "n" in template.input_variables else {})
        )
        reply, used = yield from chat(ctx, template.format_messages(**inputs))
        written = parse_queries(str(reply.content), question=state["question"])
        queries = written[:cap]
        emit("end", queries=queries)
        text = "\n".join(queries) or f"(no usable line; searching the question only): {reply.content}"
        if len(written) > cap:
            text += f"\n(dropped past the cap of {cap}: {'; '.join(written[cap:])})"
        return {"subqueries": queries, "steps": [step("rewrite", text=text)], "usage": used}

    return ModelNode(expand, name)
