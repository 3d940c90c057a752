"""The candidates a graph search already formed, as one row of numbers each (for a learned ranker).

Graph search (``rag_graphs.entity_graph.graph_search``) ends with a pool of passages and many
signals about each, of which its last stage (``rank``) uses two: the walk's probability and
hybrid search's top. A learned ranker (issue 47) may weigh them all; these are the signals, read
from what the search holds already (its first searches, the linked question, the walked
neighbourhood, the walk, its own order) plus one read of the pool's stored rows (``read_pool``):
the question's cosine to every candidate, not only to the first 20, and its words.

The pool is today's top ``POOL`` (the walk's order under hybrid's protection), every first hit
and, through the first hop's bridge entities, up to ``BRIDGE`` walked passages past that depth
(``bridge_hop``): a ranker re-orders what graph search found, it does not search.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
from langchain_core.documents import Document

from rag_graphs.entity_graph.neighbourhood import Neighbourhood
from rag_graphs.entity_graph.rows import COUNT_FIELD
from rag_graphs.store.fields import DENSE_FIELD, TEXT_FIELD
from rag_graphs.store.index import ChunkIndex
from rag_graphs.store.keywords import STOP_WORDS
from rag_graphs.store.mirror import ChunkMirror

POOL = 30
"""Today's first ``POOL`` passages join the first hits in the pool the ranker orders."""

_WORD = re.compile(r"\w+")
RRF_K = 60
"""The reciprocal rank constant, as hybrid search's fusion uses it."""

FEATURES: tuple[str, ...] = (
    "graph_rrf",  # 1 / (60 + place in today's graph search order)
    "graph_top1",  # today's first
    "graph_top2",  # today's first two
    "ppr_log",  # log10 of the walk's probability (floor 1e-9)
    "ppr_minmax",  # the walk's probability, min-max over the walked chunks
    "ppr_rrf",  # 1 / (60 + place by the walk alone)
    "dense_cosine",  # the question's cosine to the passage (stored vector)
    "dense_rrf",  # 1 / (60 + dense rank), 0 outside the first 20
    "bm25_rrf",  # BM25's share of hybrid's fused score, 0 outside hybrid's first 20
    "hybrid_rrf",  # 1 / (60 + hybrid rank), 0 outside the first 20
    "hybrid_top1",  # hybrid's first
    "hybrid_top2",  # hybrid's first two
    "hop",  # 0: a first hit, 1: holds a question entity, 2: reached through one
    "seeds_in",  # question entities the passage holds
    "seed_weight",  # their restart weights, summed (similarity / chunk count)
    "seed_similarity",  # the best match similarity among them
    "title_seed",  # its title or heading names a question entity
    "title_bridge",  # its title or heading names an entity the question does not
    "degree_log",  # log1p of its non-hub entities in the neighbourhood
    "title_in_top",  # its title or heading names an entity of today's or hybrid's first two
    "shared_top_log",  # log1p of the entities it shares with today's or hybrid's first two
    "title_words",  # share of its title's content words the question has
    "text_words",  # share of the question's content words the passage has
    "length_log",  # log1p of its words
    "bridge_log",  # log1p of the bridge entities of the other first-hop passages it holds
    "bridge_specific",  # 1 / the walked passages holding the rarest of them
    "bridge_words",  # the largest share of a held bridge entity's words the question has
    "bridge_joined",  # past today's first POOL, no first hit, holds a bridge entity (``bridge_hop``)
)
TOP = 2
"""Today's and hybrid's first ``TOP`` passages are the first hop a bridge passage follows from."""
BRIDGE_FROM = 5
"""Today's first ``BRIDGE_FROM`` passages (and hybrid's first ``TOP``) are the first hop whose
other entities are the bridge (``bridge_keys``)."""
BRIDGE = 5
"""At most ``BRIDGE`` walked passages past the pool's depth join it through a bridge entity."""


def _rrf(place: int | None) -> float:
    return 0.0 if place is None else 1.0 / (RRF_K + place + 1)


def pool_of(order: Sequence[str], dense: Sequence[str], hybrid: Sequence[str], *, k: int = 0) -> list[str]:
    """The ids to rank: today's first ``POOL`` (or ``k``, when a search asks for more) then the
    first hits not among them, no repeats.

    >>> pool_of(["a", "b"], ["c", "a"], ["d"])
    ['a', 'b', 'c', 'd']
    """
    return list(dict.fromkeys([*order[: max(POOL, k)], *dense, *hybrid]))


def bridge_keys(
    order: Sequence[str], hybrid: Sequence[str], seeds: Mapping[str, Mapping], hood: Neighbourhood
) -> dict[str, set[str]]:
    """The first hop's bridge, by passage: the non-hub entities of each of today's first
    ``BRIDGE_FROM`` passages and hybrid's first ``TOP`` that the question does not name (not a
    seed). A multi-hop question's next passage holds one (IRCoT's second hop, without an LLM).

    >>> hood = Neighbourhood({"a": ["q", "x"], "b": ["hub"]}, {"hub"}, {})
    >>> bridge_keys(["a", "b"], [], {"q": {}}, hood)
    {'a': {'x'}, 'b': set()}
    """
    named = set(seeds) | hood.hubs
    first_hop = dict.fromkeys([*order[:BRIDGE_FROM], *hybrid[:TOP]])
    return {cid: set(hood.edges.get(cid, ())) - named for cid in first_hop}


def bridge_hop(
    pool: Sequence[str],
    order: Sequence[str],
    hybrid: Sequence[str],
    seeds: Mapping[str, Mapping],
    hood: Neighbourhood,
) -> list[str]:
    """Up to ``BRIDGE`` passages the pool lacks that hold a bridge entity (``bridge_keys``), by
    their place in today's ``order`` (the walk's): the walked neighbourhood already holds them, so
    this second hop reads nothing. Today's first 30 miss ~10% of MuSiQue's gold passages, most of
    them walked but ranked low (BENCHMARKS.md, issue 47).

    >>> hood = Neighbourhood({"a": ["x"], "b": ["y"], "c": ["x"], "d": ["x"]}, set(), {})
    >>> bridge_hop(["a", "b"], ["a", "b", "d", "c"], [], {}, hood)
    ['d', 'c']
    """
    keys = set().union(*bridge_keys(order, hybrid, seeds, hood).values())
    if not keys:
        return []
    held = set(pool)
    reached = {cid for cid, entities in hood.edges.items() if cid not in held and keys.intersection(entities)}
    return [cid for cid in order if cid in reached][:BRIDGE]


def candidate_features(
    pool: Sequence[str],
    *,
    order: Sequence[str],
    chunks: Sequence[str],
    probabilities: np.ndarray,
    dense: Sequence[tuple[Document, float]],
    hybrid: Sequence[tuple[Document, float]] | None,
    seeds: Mapping[str, Mapping],
    hood: Neighbourhood,
    cosines: Mapping[str, float],
    texts: Mapping[str, tuple[str, str]],
    question: str,
) -> np.ndarray:
    """One row of ``FEATURES`` per id of ``pool``, in that order.

    Args:
        order: today's ranking of the walked chunks (``rank.rank`` over all of them).
        chunks, probabilities: the walk's chunks and their PPR probabilities (``walk.Walk``).
        dense, hybrid: the first searches' rankings (hybrid None: not searched, dense stands in).
        seeds: the linked question's entities, key -> row with ``similarity`` and chunk count.
        hood: the walked neighbourhood (each chunk's entity keys, the hubs, the titled keys).
        cosines: chunk id -> the question's cosine to it (missing: 0).
        texts: chunk id -> its (title, text) (missing: empty).
        question: the question searched.
    """
    asked = content_words(question)
    hybrid = dense if hybrid is None else hybrid
    place = {cid: i for i, cid in enumerate(order)}
    walk_order = np.argsort(-probabilities, kind="stable")
    walk_place = {chunks[i]: p for p, i in enumerate(walk_order)}
    probability = dict(zip(chunks, probabilities, strict=True))
    low, high = (float(probabilities.min()), float(probabilities.max())) if len(chunks) else (0.0, 0.0)
    dense_place = {str(d.id): i for i, (d, _) in enumerate(dense)}
    hybrid_scores = {str(d.id): (i, s) for i, (d, s) in enumerate(hybrid)}
    first = set(dense_place) | set(hybrid_scores)
    weights = {
        key: float(row.get("similarity") or 0.0) / max(int(row.get(COUNT_FIELD) or 0), 1)
        for key, row in seeds.items()
    }
    hybrid_ids = [str(d.id) for d, _ in hybrid]
    tops = [
        (top, set(hood.edges.get(top, ())) - hood.hubs)
        for top in dict.fromkeys([*order[:TOP], *hybrid_ids[:TOP]])
    ]
    bridges = bridge_keys(order, hybrid_ids, seeds, hood)
    bridge = set().union(*bridges.values())
    holding = Counter(key for keys in hood.edges.values() for key in keys if key in bridge)
    bridge_share = {key: len(content_words(key) & asked) / max(len(content_words(key)), 1) for key in bridge}
    rows = []
    for cid in pool:
        near = set().union(*(keys for top, keys in tops if top != cid))
        title, text = texts.get(cid, ("", ""))
        named, words = content_words(title), _WORD.findall(text.casefold())
        keys = set(hood.edges.get(cid, ())) - hood.hubs
        held = keys & set(weights)
        titled = hood.titled.get(cid, set())
        p = float(probability.get(cid, 0.0))
        h = hybrid_scores.get(cid)
        dense_share = _rrf(dense_place.get(cid))
        bridged = keys & set().union(*(held for top, held in bridges.items() if top != cid))
        rows.append(
            [
                _rrf(place.get(cid)),
                float(place.get(cid) == 0),
                float(place.get(cid, 99) < 2),
                math.log10(max(p, 1e-9)),
                (p - low) / (high - low) if high > low else 0.0,
                _rrf(walk_place.get(cid)),
                float(cosines.get(cid, 0.0)),
                dense_share,
                max(h[1] - dense_share, 0.0) if h is not None else 0.0,
                _rrf(h[0]) if h is not None else 0.0,
                float(h is not None and h[0] == 0),
                float(h is not None and h[0] < 2),
                0.0 if cid in first else (1.0 if held else 2.0),
                float(len(held)),
                sum(weights[key] for key in held),
                max((float(seeds[key].get("similarity") or 0.0) for key in held), default=0.0),
                float(bool(titled & set(weights))),
                float(bool(titled - set(weights))),
                math.log1p(len(keys)),
                float(bool(titled & near)),
                math.log1p(len(keys & near)),
                len(named & asked) / len(named) if named else 0.0,
                len(asked & set(words)) / len(asked) if asked else 0.0,
                math.log1p(len(words)),
                math.log1p(len(bridged)),
                max((1.0 / holding[key] for key in bridged), default=0.0),
                max((bridge_share[key] for key in bridged), default=0.0),
                float(bool(bridged) and cid not in first and place.get(cid, 0) >= POOL),
            ]
        )
    return np.asarray(rows, dtype=float).reshape(len(pool), len(FEATURES))


def content_words(text: str) -> set[str]:
    """``text``'s words, case-folded, less English function words (BM25's stop words).

    >>> sorted(content_words("Who directed The Saw of Korvik?"))
    ['directed', 'korvik', 'saw']
    """
    return {w for w in _WORD.findall(text.casefold()) if w not in STOP_WORDS}


def read_pool(
    index: ChunkIndex,
    pool: Sequence[str],
    query_vector: Sequence[float],
    expr: str | None,
    mirror: ChunkMirror | None = None,
) -> tuple[dict[str, float], dict[str, tuple[str, str]]]:
    """One read of the pool's stored rows through ``expr``: the question's cosine to each and
    each one's (title, text). ``mirror``: the store state's in-process copy (only without a
    filter), which holds the same rows and stored vectors, so the store is not asked (~14 ms of
    the rank lap at 21k passages)."""
    if mirror is not None and expr is not None:
        raise ValueError("a filtered read never reads the in-process copy")
    if mirror is not None:
        held = mirror.stored(pool)
        rows: Mapping[str, Mapping] = {cid: row for cid, (row, _) in held.items()}
        vectors: Mapping[str, Sequence[float] | np.ndarray] = {cid: v for cid, (_, v) in held.items()}
    else:
        rows = index.chunks.get(list(pool), [DENSE_FIELD, TEXT_FIELD, "title"], where=expr)
        vectors = {cid: row[DENSE_FIELD] for cid, row in rows.items()}
    texts = {cid: (str(row.get("title") or ""), str(row.get(TEXT_FIELD) or "")) for cid, row in rows.items()}
    return cosines_of(vectors, query_vector), texts


def cosines_of(
    vectors: Mapping[str, Sequence[float] | np.ndarray], query: Sequence[float]
) -> dict[str, float]:
    """The cosine of ``query`` to each stored vector, by chunk id."""
    if not vectors:
        return {}
    ids = list(vectors)
    matrix = np.asarray([vectors[cid] for cid in ids], dtype=float)
    q = np.asarray(query, dtype=float)
    norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(q)), 1e-12)
    sims = matrix @ q / np.maximum(norms, 1e-12)
    return dict(zip(ids, (float(s) for s in sims), strict=True))
