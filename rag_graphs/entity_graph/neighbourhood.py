"""Graph search's second stage: the neighbourhood it walks, read from the store by key (never by
scanning, never the whole store).

Graph search (``rag_graphs.entity_graph.graph_search``) walks only what these reads return: the seeds'
chunks and the first hits with their entities, then the chunks one non-hub entity away (the second
hop: without it a bridge passage's neighbour is never reached). Every chunk is read through the
caller's filter ``expr``, so the walk never sees a chunk the caller may not (a search's reads go
through its store state's cache, ``rows.GraphRows``, which serves chunk rows only to unfiltered
reads).
"""

from __future__ import annotations

from typing import NamedTuple

from langchain_core.documents import Document

from rag_graphs.entity_graph.entities import title_keys
from rag_graphs.entity_graph.rows import CHUNKS_FIELD, COUNT_FIELD, GraphRows
from rag_graphs.store.fields import ENTITIES_FIELD, PRIMARY_FIELD
from rag_graphs.store.index import ChunkIndex

_TITLE_FIELDS = ["title", "headings"]
HUB_CHUNKS = 100
"""An entity in more chunks than this is a hub, left out of the walk: it links everything (a
country, a year), its specificity (1 / its chunk count) is ~0 anyway, and its chunks would fill
the neighbourhood before the second hop."""


class Neighbourhood(NamedTuple):
    """What one question walks: chunk id -> its entity keys (``edges``), the hub entities left out,
    and chunk id -> the keys among its entities that its title or headings name (``titled``)."""

    edges: dict[str, list[str]]
    hubs: set[str]
    titled: dict[str, set[str]]


def fetch_neighbourhood(
    index: ChunkIndex,
    seeds: dict[str, dict],
    first_hits: list[tuple[Document, float]],
    *,
    expr: str | None,
    size: int,
    rows: GraphRows | None = None,
) -> Neighbourhood:
    """The chunks to walk (chunk id -> its entity keys), the hub entities to leave out, and which
    of each chunk's entities its title or headings name.

    Read from the store by key, never by scanning: the first hits and the seeds' chunks (with
    all their entities), then the chunks that share a non-hub entity with those (with the
    shared entities). Every chunk is read through ``expr``; at most ``size`` chunks. ``rows``: the
    search's reads (``rows.graph_rows``, its store state's cache); None reads the store.
    """
    rows = rows if rows is not None else GraphRows(index)
    edges = {str(d.id): list(d.metadata.get(ENTITIES_FIELD) or []) for d, _ in first_hits}
    titled = {str(d.id): title_keys(d.metadata) for d, _ in first_hits}
    first = [c for row in seeds.values() for c in (row.get(CHUNKS_FIELD) or []) if c not in edges]
    first = list(dict.fromkeys(first))[: max(size - len(edges), 0)]
    for cid, row in rows.chunks(first, [PRIMARY_FIELD, ENTITIES_FIELD, *_TITLE_FIELDS], expr).items():
        edges[cid] = list(row.get(ENTITIES_FIELD) or [])
        titled[cid] = title_keys(row)
    # the second hop's order (it stops at ``size``): first the entities of the question entities' own
    # pages (titled by a seed: X's page names the bridge, "the director of X"), then the others'
    named = {cid: None for cid in edges if not seeds.keys().isdisjoint(titled.get(cid, ()))}
    sources = [*named, *(cid for cid in edges if cid not in named)]
    frontier = list(dict.fromkeys(e for cid in sources for e in edges[cid] if e not in seeds))
    info = rows.entities(frontier, [CHUNKS_FIELD, COUNT_FIELD]) if frontier else {}
    hubs = {key for key, row in info.items() if int(row.get(COUNT_FIELD) or 0) > HUB_CHUNKS}
    if len(edges) < size:
        second: dict[str, list[str]] = {}
        for key, row in info.items():
            if key not in hubs:
                for cid in row.get(CHUNKS_FIELD) or []:
                    if cid not in edges:
                        second.setdefault(cid, []).append(key)
        ids = list(second)[: size - len(edges)]
        for cid, row in rows.chunks(ids, [PRIMARY_FIELD, *_TITLE_FIELDS], expr).items():
            edges[cid] = second[cid]
            titled[cid] = title_keys(row)
    about = {cid: kept for cid, keys in titled.items() if cid in edges and (kept := keys & set(edges[cid]))}
    return Neighbourhood(edges, hubs, about)
