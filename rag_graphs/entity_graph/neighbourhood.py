"""The walk's neighbourhood, read from the store by key (never by scanning, never the whole store).

Graph search (``rag_graphs.entity_graph.ppr``) walks only what these reads return: the
seeds' chunks and the first hits with their entities, the chunks one non-hub entity away, the
question's facts and their chunks, and the stored vectors of the passages walked. Every chunk is
read through the caller's filter ``expr``, so the walk never sees a chunk the caller may not.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from langchain_core.documents import Document

from rag_graphs.config.specs import all_of
from rag_graphs.entity_graph.entities import title_keys
from rag_graphs.entity_graph.facts import Fact, fact_seed_weights, link_facts, to_facts
from rag_graphs.entity_graph.linking import ENTITY_FIELDS
from rag_graphs.entity_graph.rows import CHUNKS_FIELD, COUNT_FIELD, entity_rows, in_filter
from rag_graphs.store.fields import DENSE_FIELD, ENTITIES_FIELD, PRIMARY_FIELD
from rag_graphs.store.index import ChunkIndex

_LOOKUP_BATCH = 512
_TITLE_FIELDS = ["title", "headings"]
FACT_SEED = "via_fact"
"""Marks a seed only a fact reached: it restarts the walk, but its chunks join the neighbourhood
through the second hop (where ``size`` may cut them), not before it like a named seed's."""


def chunk_rows(index: ChunkIndex, ids: list[str], expr: str | None, fields: list[str]) -> dict[str, dict]:
    """Stored chunks by id that pass ``expr`` (the rest: deleted or hidden, are left out)."""
    out: dict[str, dict] = {}
    for i in range(0, len(ids), _LOOKUP_BATCH):
        rows = index.client.query(
            index.collection, filter=all_of(in_filter(ids[i : i + _LOOKUP_BATCH]), expr), output_fields=fields
        )
        out.update((r[PRIMARY_FIELD], r) for r in rows)
    return out


def cosines(index: ChunkIndex, ids: list[str], query_vector) -> np.ndarray:
    """Cosine of each chunk's stored dense vector to the question's (0 for a chunk not read)."""
    rows = chunk_rows(index, ids, None, [PRIMARY_FIELD, DENSE_FIELD])
    query = np.asarray(query_vector, dtype=float)
    query = query / (np.linalg.norm(query) or 1.0)
    out = np.zeros(len(ids))
    for i, cid in enumerate(ids):
        vector = rows.get(cid, {}).get(DENSE_FIELD)
        if vector is not None:
            v = np.asarray(vector, dtype=float)
            out[i] = float(v @ query) / (np.linalg.norm(v) or 1.0)
    return out


def question_facts(
    index: ChunkIndex,
    pending,
    expr: str | None,
    matched: dict[str, dict],
    weight: float,
    *,
    hub_chunks: int | None = None,
    relative: bool = False,
) -> tuple[list[Fact], list[tuple[Document, float]]]:
    """The question's facts whose chunks the caller may read, each naming its entities; those
    entities added to ``matched`` as seeds (similarity: ``weight`` x the best fact's, min-max
    normalised over the facts when ``relative``, kept if a name matched better), except hubs
    (in more than ``hub_chunks`` chunks: a seed's chunks all join the neighbourhood, and a hub's
    would crowd out the second hop); and the facts' chunks (with all their entity keys) for the
    neighbourhood."""
    if pending is None:
        return [], []
    facts = to_facts(pending.result())
    ids = list(dict.fromkeys(f.parent for f in facts))
    rows = chunk_rows(index, ids, expr, [PRIMARY_FIELD, ENTITIES_FIELD])
    keys = {cid: list(rows[cid].get(ENTITIES_FIELD) or []) for cid in ids if cid in rows}
    facts = link_facts(facts, keys)
    strengths = fact_seed_weights(facts, relative=relative)
    for key, row in entity_rows(index, list(strengths), ENTITY_FIELDS).items():
        if hub_chunks is not None and int(row.get(COUNT_FIELD) or 0) > hub_chunks:
            continue
        similarity = weight * strengths[key]
        if key not in matched:
            matched[key] = {**row, "similarity": similarity, FACT_SEED: True}
        elif similarity > matched[key].get("similarity", 0.0):
            matched[key] = {**matched[key], "similarity": similarity}
    parents = [
        (Document(id=cid, page_content="", metadata={ENTITIES_FIELD: ks}), 0.0) for cid, ks in keys.items()
    ]
    return facts, parents


class Neighbourhood(NamedTuple):
    """What one question walks: chunk id -> its entity keys (``edges``), the hub entities left out,
    and chunk id -> the keys among its entities that its title or headings name (``titled``)."""

    edges: dict[str, list[str]]
    hubs: set[str]
    titled: dict[str, set[str]]


def fetch_neighbourhood(
    index: ChunkIndex,
    seeds: dict[str, dict],
    dense_hits: list[tuple[Document, float]],
    *,
    expr: str | None,
    size: int,
    expand: bool,
    hub_chunks: int,
    after: list[tuple[Document, float]] | None = None,
) -> Neighbourhood:
    """The chunks to walk (chunk id -> its entity keys), the hub entities to leave out, and which
    of each chunk's entities its title or headings name.

    Read from the store by key, never by scanning: the seeds' chunks and the
    dense hits (with all their entities), then (``expand``) the chunks that
    share a non-hub entity with those (with the shared entities). Every chunk
    is read through ``expr``; at most ``size`` chunks. ``after`` (the question's facts' chunks,
    with their entities) join after the seeds' chunks, so that their entities come after the
    seeds' chunks' in the second hop, which ``size`` may cut short.
    """
    edges = {str(d.id): list(d.metadata.get(ENTITIES_FIELD) or []) for d, _ in dense_hits}
    titled = {str(d.id): title_keys(d.metadata) for d, _ in dense_hits}
    named = {key: row for key, row in seeds.items() if not row.get(FACT_SEED)}
    first = [c for row in named.values() for c in (row.get(CHUNKS_FIELD) or []) if c not in edges]
    first = list(dict.fromkeys(first))[: max(size - len(edges), 0)]
    for cid, row in chunk_rows(index, first, expr, [PRIMARY_FIELD, ENTITIES_FIELD, *_TITLE_FIELDS]).items():
        edges[cid] = list(row.get(ENTITIES_FIELD) or [])
        titled[cid] = title_keys(row)
    for doc, _ in after or []:
        if str(doc.id) not in edges and len(edges) < size:
            edges[str(doc.id)] = list(doc.metadata.get(ENTITIES_FIELD) or [])
    frontier = list(dict.fromkeys(e for ents in edges.values() for e in ents if e not in named))
    info = entity_rows(index, frontier, [CHUNKS_FIELD, COUNT_FIELD]) if frontier else {}
    hubs = {key for key, row in info.items() if int(row.get(COUNT_FIELD) or 0) > hub_chunks}
    if expand and len(edges) < size:
        second: dict[str, list[str]] = {}
        for key, row in info.items():
            if key not in hubs:
                for cid in row.get(CHUNKS_FIELD) or []:
                    if cid not in edges:
                        second.setdefault(cid, []).append(key)
        ids = list(second)[: size - len(edges)]
        for cid, row in chunk_rows(index, ids, expr, [PRIMARY_FIELD, *_TITLE_FIELDS]).items():
            edges[cid] = second[cid]
            titled[cid] = title_keys(row)
    about = {cid: kept for cid, keys in titled.items() if cid in edges and (kept := keys & set(edges[cid]))}
    return Neighbourhood(edges, hubs, about)
