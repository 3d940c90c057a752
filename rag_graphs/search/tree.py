"""The read side of a collection's RAPTOR tree (``rag_graphs.ingestion.raptor`` builds it, rows in
``<collection>_raptor``, ``rag_graphs.store.tree``): whether a collection has one, the context
that searches it, and the nodes a run may read (``rag_graphs.search.derived``'s access rule)."""

from __future__ import annotations

import dataclasses

from langchain_core.documents import Document

from rag_graphs.config.context import RagContext
from rag_graphs.ingestion.raptor import leaves_of
from rag_graphs.search import derived
from rag_graphs.search.retrieval import index_for
from rag_graphs.store.tree import tree_collection


def tree_context(ctx: RagContext) -> RagContext:
    """``ctx`` pointed at the collection's RAPTOR tree."""
    return dataclasses.replace(ctx, collection=tree_collection(ctx.collection))


def has_tree(ctx: RagContext) -> bool:
    """True when ``RagContext.collection`` has a RAPTOR tree (``rag-graphs raptor build``); never
    with the user's own retriever."""
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
