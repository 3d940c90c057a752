"""Which derived rows a run may read: a RAPTOR summary or a GraphRAG community report was written
from the text of several chunks, so it is shown only when every one of them is still stored and the
run's filter admits it; and which linked entities a run may name (one of whose chunks it may read).

``rag_graphs.store.filters.search_expr`` (``search_filter``, tenant, tags, sources) is written for
chunk rows; a derived row does not carry the fields a ``search_filter`` may name (``kind``,
``page``...), so the rule is checked on its source chunks, in the chunk collection, never on
the derived row's own labels. A deny filter (``kind != "table"``) keeps a table out of naive
search; the summary written from that table must not serve it either (attack round 3).

"Still stored" holds with no filter too: a build that raced a delete (the model was writing the
report while the file went) may have stored a row over a chunk that is gone, and an unrestricted
run must not send that text to a model either (attack round 4, issue 50 item 4). An entity row is
shared by every tenant whose chunks name it, so a step that lists the question's linked entities
lists only those the run could have found in its own chunks (issue 50 item 3).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.documents import Document

from rag_graphs.config.context import RagContext
from rag_graphs.entity_graph.rows import CHUNKS_FIELD, COUNT_FIELD
from rag_graphs.search.retrieval import index_for
from rag_graphs.store.fields import ENTITIES_FIELD
from rag_graphs.store.filters import quote, search_expr

_ID_BATCH = 512
"""Chunk ids read per query when checking a batch of derived rows."""


def admitted(ctx: RagContext, chunk_ids: Sequence[str]) -> set[str]:
    """The ids among ``chunk_ids`` that are stored and that the run's filter (if any) admits."""
    ids = list(dict.fromkeys(map(str, chunk_ids)))
    expr = search_expr(ctx)
    chunks, found = index_for(ctx), set()
    for i in range(0, len(ids), _ID_BATCH):
        found |= chunks.readable_ids(ids[i : i + _ID_BATCH], expr=expr)
    return found


def readable(
    ctx: RagContext, rows: list[Document], sources_of: Callable[[Document], list[str]]
) -> list[Document]:
    """The ``rows`` whose source chunks (``sources_of(row)``) are all stored and readable by the
    run, in order. One read of the chunk collection per batch of ids, however many rows ask."""
    wanted = {row.id: [str(c) for c in sources_of(row)] for row in rows}
    ok = admitted(ctx, [c for ids in wanted.values() for c in ids])
    return [row for row in rows if all(c in ok for c in wanted[row.id])]


def nameable(ctx: RagContext, seeds: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The keys of ``seeds`` (entity key -> its entity row: ``chunks`` postings, ``n`` chunks in
    all) that the run may name, in order: those at least one of whose chunks it may read. All of
    them when the run has no filter (naming an entity reveals no chunk then).

    One read of the chunk collection for every posting; an entity whose postings were cut
    (a hub named by more chunks than its row keeps) and admit none is looked up by its key on
    the chunk rows under the filter (one query each)."""
    expr = search_expr(ctx)
    if expr is None:
        return list(seeds)
    postings = {key: [str(c) for c in row.get(CHUNKS_FIELD) or []] for key, row in seeds.items()}
    ok = admitted(ctx, [c for ids in postings.values() for c in ids])
    names: list[str] = []
    for key, row in seeds.items():
        if any(c in ok for c in postings[key]) or (
            int(row.get(COUNT_FIELD) or 0) > len(postings[key]) and _named_in(ctx, key, expr)
        ):
            names.append(key)
    return names


def _named_in(ctx: RagContext, key: str, expr: str) -> bool:
    """True when a chunk ``expr`` admits names the entity ``key``."""
    named = f"json_contains({ENTITIES_FIELD}, {quote(key)})"
    return bool(index_for(ctx).where(f"({named}) and ({expr})", limit=1))
