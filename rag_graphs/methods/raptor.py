"""RAPTOR retrieval over the collection's summary tree (build it first: ``rag-graphs raptor build``).

    START -> retrieve_tree -> generate -> END

``collapsed`` (default, the paper's better mode) searches leaves and
summaries of every level together, so a broad question meets a summary and a
narrow one a leaf. ``traversal`` starts at the top level and descends: at
each level the ``k`` best children of the nodes kept so far. Summaries carry
``children`` ids, so ``rag_graphs.search.tree.readable`` shows a summary only to a run that may
read every chunk under it.

When it pays: broad or summary questions over long documents, which a summary of many chunks
answers better than any one chunk.
Cost: one search over leaves and summaries and one model call (the tree is built once, ahead of
questions).
"""

from __future__ import annotations

import dataclasses

from langgraph.graph import StateGraph
from langgraph.runtime import Runtime

from rag_graphs.config.context import RagContext
from rag_graphs.config.runtime import get_context
from rag_graphs.config.specs import all_of
from rag_graphs.nodes import make_generate
from rag_graphs.nodes.builder import compile_method, linear_builder
from rag_graphs.nodes.events import emit, step
from rag_graphs.search.own import refuse_own_retriever
from rag_graphs.search.retrieval import search
from rag_graphs.search.structures import refuse_missing
from rag_graphs.search.tree import readable, tree_context
from rag_graphs.state import RagState, usage
from rag_graphs.store import ids_filter

MAX_LEVEL = 8


def _restricted(ctx: RagContext, expr: str) -> RagContext:
    return dataclasses.replace(ctx, search_filter=all_of(ctx.search_filter, expr))


def retrieve_tree(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Search the RAPTOR tree of ``RagContext.collection`` (collapsed or by traversal)."""
    ctx = get_context(runtime)
    refuse_own_retriever(ctx, "the raptor method (the collection's RAPTOR tree)")
    tree = tree_context(ctx)
    refuse_missing(ctx, "raptor")
    question = state["question"]
    steps, found, searches = [], [], 0
    if ctx.raptor_mode == "collapsed":
        found = readable(ctx, search(tree, question))
        searches = 1
        steps.append(step("retrieve", query=question, doc_ids=[str(d.id) for d in found]))
    else:
        level_docs = []
        for level in range(MAX_LEVEL, -1, -1):  # the top level is the highest that has nodes
            level_docs = search(_restricted(tree, f"level == {level}"), question)
            searches += 1
            if level_docs:
                break
        while level_docs:
            shown = readable(ctx, level_docs)  # the descent goes on through every node found
            found += shown
            level_text = f"level {level_docs[0].metadata.get('level')}"
            steps.append(
                step("retrieve", query=question, doc_ids=[str(d.id) for d in shown], text=level_text)
            )
            ids = [str(d.id) for d in level_docs]
            children = [c for d in level_docs for c in d.metadata.get("children") or []]
            level_docs = search(_restricted(tree, ids_filter(children)), question) if children else []
            searches += bool(children)
    ids = [str(d.id) for d in found]
    emit("end", doc_ids=ids)
    return {
        "documents": found,
        "searches": [{"query": question, "doc_ids": ids}],
        "hops": 1,
        "latest": ids,
        "latest_repeated": False,
        "steps": steps,
        "usage": usage(retrievals=searches, hops=1),
    }


def build() -> StateGraph:
    """The uncompiled graph."""
    return linear_builder(("retrieve_tree", retrieve_tree), ("generate", make_generate()))


graph = compile_method(build(), "raptor")
