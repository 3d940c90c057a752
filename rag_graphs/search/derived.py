"""Which derived rows a run may read: a RAPTOR summary or a GraphRAG community report was written
from the text of several chunks, so it is shown only when the run's filter admits every one of them.

``rag_graphs.store.filters.search_expr`` (``search_filter``, tenant, tags, sources) is written for
chunk rows; a derived row does not carry the fields a ``search_filter`` may name (``kind``,
``page``...), so the rule is checked on its source chunks, in the chunk collection, never on
the derived row's own labels. A deny filter (``kind != "table"``) keeps a table out of naive
search; the summary written from that table must not serve it either (attack round 3).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain_core.documents import Document

from rag_graphs.config.context import RagContext
from rag_graphs.search.retrieval import index_for
from rag_graphs.store.filters import search_expr

_ID_BATCH = 512
"""Chunk ids read per query when checking a batch of derived rows."""


def admitted(ctx: RagContext, chunk_ids: Sequence[str]) -> set[str]:
    """The ids among ``chunk_ids`` that are stored and that the run's filter admits (all of
    them, stored or not, when the run has no filter)."""
    ids = list(dict.fromkeys(map(str, chunk_ids)))
    expr = search_expr(ctx)
    if expr is None:
        return set(ids)
    chunks, found = index_for(ctx), set()
    for i in range(0, len(ids), _ID_BATCH):
        found |= {str(d.id) for d in chunks.get(ids[i : i + _ID_BATCH], expr=expr)}
    return found


def readable(
    ctx: RagContext, rows: list[Document], sources_of: Callable[[Document], list[str]]
) -> list[Document]:
    """The ``rows`` whose source chunks (``sources_of(row)``) the run may all read, in order.
    One read of the chunk collection per batch of ids, however many rows ask."""
    if search_expr(ctx) is None:
        return rows
    wanted = {row.id: [str(c) for c in sources_of(row)] for row in rows}
    ok = admitted(ctx, [c for ids in wanted.values() for c in ids])
    return [row for row in rows if all(c in ok for c in wanted[row.id])]
