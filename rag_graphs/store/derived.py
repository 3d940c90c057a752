"""What is derived from a collection's chunks and must go when they go: the RAPTOR tree's copies
and summaries (``tree``) and the GraphRAG community reports (``reports``).

``ChunkIndex`` calls ``forget_derived`` before it deletes chunks (an ``ingest --delete``, a changed
or relabelled file replacing its chunks), so a failure part-way leaves the chunks, never a summary
or report of a chunk that is gone. Each structure's own build writes the dropped rows again.
"""

from __future__ import annotations

from rag_graphs.store.reports import Source, forget_reports, reports_collection
from rag_graphs.store.tree import forget_chunks, tree_collection


def forget_derived(source: Source, chunk_ids: list[str]) -> int:
    """Remove what ``source``'s tree and community reports derived from ``chunk_ids``, where they
    exist; return how many rows were removed."""
    if not chunk_ids:
        return 0
    removed = 0
    for name, forget in (
        (tree_collection(source.collection), forget_chunks),
        (reports_collection(source.collection), forget_reports),
    ):
        if source.derived(name).exists():
            removed += forget(source.beside(name), chunk_ids)
    return removed
