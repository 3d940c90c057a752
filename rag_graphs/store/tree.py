"""The rows of a collection's RAPTOR tree that must go when chunks go (``rag_graphs.ingestion.raptor`` builds
the tree). Here, below ``rag_graphs.ingestion.raptor``: ``ChunkIndex`` removes a chunk's leaf copies and every
summary above them before it deletes the chunk, and the index must not import what builds on it."""

from __future__ import annotations

from typing import Protocol

from langchain_core.documents import Document

from rag_graphs.store.collection import QUERY_LIMIT
from rag_graphs.store.filters import quote

_ID_BATCH = 256


class Tree(Protocol):
    """What deleting from a tree needs of its ``ChunkIndex``."""

    def delete_ids(self, ids: list[str]) -> int: ...

    def where(self, expr: str, *, limit: int = 100) -> list[Document]: ...


def tree_collection(collection: str) -> str:
    """The collection that holds ``collection``'s RAPTOR tree."""
    return f"{collection}_raptor"


def forget_chunks(tree: Tree, chunk_ids: list[str]) -> int:
    """Remove these chunks' leaf copies from ``tree`` and every summary built over them, level
    after level up to the root; return how many nodes were removed. Summaries over other
    chunks stay; ``build_tree`` writes the removed ones again from what is left."""
    removed = 0
    frontier = list(dict.fromkeys(map(str, chunk_ids)))
    while frontier:
        parents = _parents(tree, frontier)
        removed += tree.delete_ids(frontier)
        frontier = [p for p in parents if p not in frontier]
    return removed


def _parents(tree: Tree, ids: list[str]) -> list[str]:
    """Ids of the tree nodes that list any of ``ids`` among their children."""
    found: list[str] = []
    for i in range(0, len(ids), _ID_BATCH):
        values = ", ".join(quote(x) for x in ids[i : i + _ID_BATCH])
        found += [
            str(d.id) for d in tree.where(f"json_contains_any(children, [{values}])", limit=QUERY_LIMIT)
        ]
    return list(dict.fromkeys(found))
