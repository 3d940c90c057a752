"""HyDE (Gao et al. 2022): search with a hypothetical answer passage instead of the question.

    START -> hypothesize -> retrieve -> generate -> END

The model writes the passage it expects a reference text to contain
(``hypothesis``); that passage is the ``query`` the shared retrieve step embeds
(and, in hybrid mode, matches by BM25), so the search looks for documents that
read like answers rather than like questions, as in the paper and LangChain's
``HypotheticalDocumentEmbedder``. ``RagContext.hyde_search="question+passage"``
searches the question followed by the passage instead (the question's own words
then count for BM25; the paper averages the question's vector in, a vector store
query cannot). The answer is generated from the real passages only.

When it pays: questions worded unlike the documents (short, abstract or question-shaped); it raised
supporting-passage recall over naive on HotpotQA.
Cost: two model calls (the hypothetical passage, the answer) and one search.
"""

from __future__ import annotations

from typing import Annotated

from langgraph.graph import StateGraph

from rag_graphs.config.context import RagContext
from rag_graphs.llm.calls import Body
from rag_graphs.nodes import make_generate, retrieve
from rag_graphs.nodes.builder import compile_method, linear_builder
from rag_graphs.nodes.chat import chat
from rag_graphs.nodes.events import emit, step
from rag_graphs.nodes.inputs import template_inputs
from rag_graphs.nodes.model_node import model_node
from rag_graphs.prompts import load_prompt
from rag_graphs.state import RagState, Unset

MAX_PASSAGE_CHARS = 1500
_PASSAGE = load_prompt("hyde_passage")


class HydeState(RagState, total=False):
    hypothesis: Annotated[str, Unset("")]  # the passage the model imagined; what the search looks for


@model_node
def hypothesize(state: HydeState, ctx: RagContext) -> Body[dict]:
    """Write the hypothetical passage; the next search runs on it (``hyde_search``)."""
    reply, used = yield from chat(ctx, _PASSAGE.format_messages(**template_inputs(_PASSAGE, state)))
    passage = " ".join(str(reply.content).split())[:MAX_PASSAGE_CHARS]
    query = state["question"]  # an empty passage searches the question
    if passage:
        query = passage if ctx.hyde_search == "passage" else f"{query}\n{passage}"
    emit("end", query=query)
    return {
        "hypothesis": passage,
        "query": query,
        "steps": [step("rewrite", query=query, text=str(reply.content))],
        "usage": used,
    }


def build() -> StateGraph:
    """The uncompiled graph."""
    return linear_builder(
        ("hypothesize", hypothesize),
        ("retrieve", retrieve),
        ("generate", make_generate()),
        state=HydeState,
    )


graph = compile_method(build(), "hyde")
