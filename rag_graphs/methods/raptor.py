"""RAPTOR retrieval over the collection's summary tree (build it first: ``rag-graphs raptor build``).

    START -> retrieve_tree -> generate -> END

``collapsed`` (default, the paper's better mode) searches leaves and
summaries of every level together, so a broad question meets a summary and a
narrow one a leaf. ``traversal`` starts at the top level and descends: at
each level the ``k`` best children of the nodes kept so far. Summaries carry
``children`` ids, so ``rag_graphs.ingestion.raptor.leaves_of`` traces them to their chunks.

When it pays: broad or summary questions over long documents, which a summary of many chunks
answers better than any one chunk.
Cost: one search over leaves and summaries and one model call (the tree is built once, ahead of
questions).
"""

from __future__ import annotations

import dataclasses

from langchain_core.documents import Document
from langgraph.graph import StateGraph
from langgraph.runtime import Runtime

from rag_graphs.config.context import RagContext
from rag_graphs.config.runtime import get_context
from rag_graphs.config.specs import all_of
from rag_graphs.ingestion.raptor import leaves_of, tree_collection
from rag_graphs.nodes import make_generate
from rag_graphs.nodes.builder import compile_method, linear_builder
from rag_graphs.nodes.events import emit, step
from rag_graphs.search import derived
from rag_graphs.search.own import refuse_own_retriever
from rag_graphs.search.retrieval import index_for, search
from rag_graphs.state import RagState, usage
from rag_graphs.store import ids_filter

MAX_LEVEL = 8


def _restricted(ctx: RagContext, expr: str) -> RagContext:
    return dataclasses.replace(ctx, search_filter=all_of(ctx.search_filter, expr))


def tree_context(ctx: RagContext) -> RagContext:
    """``ctx`` pointed at the collection's RAPTOR tree."""
    return dataclasses.replace(ctx, collection=tree_collection(ctx.collection))


def has_tree(ctx: RagContext) -> bool:
    """True when ``RagContext.collection`` has a RAPTOR tree (``auto`` routes there only then;
    never with the user's own retriever)."""
    return ctx.retriever is None and index_for(tree_context(ctx)).count() > 0


def readable(ctx: RagContext, nodes: list[Document]) -> list[Document]:
    """The tree nodes a caller may read: a leaf is a copy of its chunk and passes the run's filter
    itself; a summary was written from the text of every chunk under it, so it is shown only when
    the run's filter (``search_expr``: ``search_filter``, tenant, tags, sources) admits every one of
    them. A deny filter (``kind != "table"``) kept the table out of naive search while RAPTOR served
    the summary written from it (attack round 3)."""
    tree = index_for(tree_context(ctx))

    def leaves(node: Document) -> list[str]:
        if not node.metadata.get("level", 0):  # a leaf copies its chunk's labels: the search admitted it
            return []
        return [str(leaf.id) for leaf in leaves_of(tree, str(node.id))]

    return derived.readable(ctx, nodes, leaves)


def retrieve_tree(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Search the RAPTOR tree of ``RagContext.collection`` (collapsed or by traversal)."""
    ctx = get_context(runtime)
    refuse_own_retriever(ctx, "the raptor method (the collection's RAPTOR tree)")
    tree = tree_context(ctx)
    if not has_tree(ctx):
        raise ValueError(
            f"no RAPTOR tree for collection {ctx.collection!r}: run `rag-graphs raptor build` first"
        )
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
