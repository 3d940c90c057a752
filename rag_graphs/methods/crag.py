"""Corrective RAG (CRAG, Yan et al. 2024): grade what was retrieved and correct course.

    START -> retrieve -> grade --(a correct passage)--> refine -> generate -> END
                           \\--(none correct, budget left)--> rewrite -> retrieve | web_search
                           \\--(budget spent | repeated query)--> generate
    web_search --(searched)--> refine -> generate
               \\--(declined by a person)--> retrieve

Correct and ambiguous passages are kept; "refine" cuts the kept passages
into knowledge strips (sentences) and keeps the strips that share content
words with the question, so the answer sees only what matters. Refining is
lexical (no model call), which keeps CRAG's cost at one call per graded
passage. When no passage is correct the query is rewritten and, as in the
paper, sent to the web when ``RagContext.web_search`` holds a tool (its
results join the ambiguous passages, as ``kind="web"`` documents citing
their URL); without one the corpus is searched again with the new query. With
``web_search`` in ``RagContext.interrupts`` a person confirms each web search first; a
decline searches the corpus instead, for the rest of the run.

When it pays: corpora where the first search often misses: it grades what it found and searches
again (or the web, with a ``web_search`` tool) when nothing is correct.
Cost: one grading call per retrieved passage (``k``), a rewrite and a search per retry (up to
``max_hops``, 3), plus the answer.
"""

from __future__ import annotations

import re
from typing import Literal

from langchain_core.documents import Document
from langgraph.graph import END, StateGraph
from langgraph.runtime import Runtime

from rag_graphs.config.context import RagContext
from rag_graphs.config.runtime import get_context
from rag_graphs.llm.calls import Body, Call
from rag_graphs.llm.tools import web_documents
from rag_graphs.llm.web import web_tool
from rag_graphs.nodes import make_generate, make_rewrite, retrieve
from rag_graphs.nodes.builder import BEGIN, compile_method, new_builder
from rag_graphs.nodes.events import emit, step
from rag_graphs.nodes.grade import grade
from rag_graphs.nodes.inputs import answer_documents
from rag_graphs.nodes.interrupts import confirm_web
from rag_graphs.nodes.model_node import model_node
from rag_graphs.nodes.retrieve import found
from rag_graphs.state import RagState

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[a-z0-9]{3,}")
_STOP = frozenset(
    "the and was were what which who whom where when how for from with that this are its his her".split()
)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def knowledge_strips(doc: Document, question: str) -> Document:
    """``doc`` reduced to the sentences sharing a content word with ``question`` (all if none do)."""
    wanted = _words(question)
    sentences = [s.strip() for s in _SENTENCE.split(doc.page_content) if s.strip()]
    strips = [s for s in sentences if _words(s) & wanted]
    text = " ".join(strips) if strips else doc.page_content
    return Document(id=doc.id, page_content=text, metadata=doc.metadata)


def refine(state: RagState) -> dict:
    """Turn the kept passages into knowledge strips."""
    docs = [knowledge_strips(d, state["question"]) for d in answer_documents(state)]
    kept = sum(len(d.page_content) for d in docs)
    total = sum(len(d.page_content) for d in answer_documents(state))
    text = f"kept {kept} of {total} characters as knowledge strips"
    return {"evidence": docs, "steps": [step("note", text=text)]}


class CragState(RagState, total=False):
    web_declined: bool  # a person declined the web search (``RagContext.interrupts``): none this run


@model_node
def web_search(state: CragState, ctx: RagContext) -> Body[dict]:
    """Search the web with the rewritten query; results join the kept passages. A person
    confirms it first when ``RagContext.interrupts`` asks; declined, nothing is searched here."""
    query = state.get("query") or state["question"]
    go, asked = confirm_web(ctx, state["question"], [query], state.get("stops_for", ()))
    if not go:
        return {"web_declined": True, "steps": asked}
    emit("start", query=query)
    results = yield Call(web_tool(ctx.web_search), query)  # type: ignore[arg-type]
    docs = web_documents(results, limit=ctx.k)
    update = found(state, ctx, [query], [docs])
    return update | {"evidence": [*(state.get("evidence") or []), *docs], "steps": asked + update["steps"]}


def route_after_rewrite(state: CragState, runtime: Runtime[RagContext]) -> Literal["retrieve", "web_search"]:
    """The web when the user supplied a search tool (and no person declined it), else the corpus again."""
    web = get_context(runtime).web_search is not None and not state.get("web_declined")
    return "web_search" if web else "retrieve"


def route_after_web(state: CragState) -> Literal["refine", "retrieve"]:
    """Refine the web's results; the corpus with the rewritten query when the web was declined."""
    return "retrieve" if state.get("web_declined") else "refine"


def route_after_grade(state: RagState) -> Literal["refine", "rewrite", "generate"]:
    """Refine when a passage is correct; answer when the grade node says stop; else search again."""
    if state.get("found_correct"):
        return "refine"
    return "generate" if state.get("stop_kind") else "rewrite"


def build() -> StateGraph:
    """The uncompiled graph."""
    builder = new_builder(CragState)
    builder.add_node("retrieve", retrieve)
    builder.add_node("grade", grade)
    builder.add_node("web_search", web_search)
    builder.add_node("refine", refine)
    builder.add_node("rewrite", make_rewrite("rewrite_for_search"))
    builder.add_node("generate", make_generate())
    builder.add_edge(BEGIN, "retrieve")
    builder.add_edge("retrieve", "grade")
    builder.add_conditional_edges("grade", route_after_grade)
    builder.add_conditional_edges("rewrite", route_after_rewrite)
    builder.add_conditional_edges("web_search", route_after_web)
    builder.add_edge("refine", "generate")
    builder.add_edge("generate", END)
    return builder


graph = compile_method(build(), "crag")
