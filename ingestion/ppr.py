"""Graph search: Personalized PageRank over the chunk-entity neighbourhood of a question.

The steps (HippoRAG, Gutiérrez et al. 2024, adapted to a graph kept in Milvus):

1. **Seeds.** The question's mentions (spaCy NER by default) are matched to
   stored entities by key and by embedding (``link_k`` nearest entity names
   per mention, cosine >= ``link_threshold``); the whole question is matched
   too (``query_link_k``). A seed's weight is its match similarity times its
   *specificity*, 1 / (number of chunks holding it) (HippoRAG's node
   specificity: a rare entity says more about where the answer is).
2. **Neighbourhood.** From Milvus, only: the chunks holding a seed, the
   dense/hybrid top hits, then (``expand``) the chunks sharing an entity with
   those (at most ``neighbourhood`` chunks per query). Every query carries the
   caller's filter ``expr``, so the walk never sees a chunk the caller may not.
3. **Walk.** PPR (power iteration on scipy sparse matrices) over the
   bipartite chunk-entity graph of the neighbourhood, restarting at the seeds
   and, with weight ``passage_weight``, at the dense hits (HippoRAG 2's
   passage nodes), with probability 1 - ``damping``.
4. **Blend.** Each chunk's score is ``blend`` x its PPR score plus
   (1 - ``blend``) x its dense/hybrid score, both min-max normalised over the
   candidates; the top ``k`` are returned as ``(Document, score)``.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from langchain_core.documents import Document

from ingestion.entities import ENTITIES_FIELD, Extractor, SpacyExtractor, normalize
from ingestion.graph import (
    CHUNKS_FIELD,
    COUNT_FIELD,
    NAME_FIELD,
    entity_collection,
    entity_rows,
    has_graph,
    in_filter,
)
from ingestion.store import DENSE_FIELD, PRIMARY_FIELD, ChunkIndex, all_of, embed_queries

_DENSE_SEARCH = {"metric_type": "COSINE", "params": {}}
_LOOKUP_BATCH = 512


@dataclass
class GraphHits:
    """A graph search's ranking and what produced it (for a reasoning step or a trace)."""

    hits: list[tuple[Document, float]]
    seeds: list[tuple[str, float]] = field(default_factory=list)  # entity name, restart weight
    mentions: list[str] = field(default_factory=list)  # what the question extractor found
    chunks: int = 0  # chunk nodes in the walked neighbourhood
    entities: int = 0  # entity nodes in the walked neighbourhood
    milliseconds: dict[str, float] = field(default_factory=dict)

    def describe(self) -> str:
        seeds = ", ".join(f"{name} ({weight:.2f})" for name, weight in self.seeds[:8]) or "none"
        return f"graph search: seeds {seeds}; neighbourhood {self.chunks} chunks, {self.entities} entities"


_QUESTION_EXTRACTORS: dict[str, Extractor | None] = {}


def question_extractor() -> Extractor | None:
    """spaCy NER for questions when installed (loaded once), else None (dense linking only)."""
    if "spacy" not in _QUESTION_EXTRACTORS:
        try:
            _QUESTION_EXTRACTORS["spacy"] = SpacyExtractor()
        except ImportError:
            _QUESTION_EXTRACTORS["spacy"] = None
    return _QUESTION_EXTRACTORS["spacy"]


def personalized_pagerank(
    incidence, reset: np.ndarray, *, damping: float = 0.5, tol: float = 1e-6, max_iter: int = 100
) -> np.ndarray:
    """PPR over the bipartite graph with ``incidence`` (chunks x entities, scipy sparse).

    Nodes are the chunks then the entities; ``reset`` (one weight per node)
    is normalised to the restart distribution. A walker follows an edge with
    probability ``damping`` and restarts otherwise; mass at a node without
    edges restarts too. Returns the stationary probabilities.
    """
    import scipy.sparse as sp

    n_chunks, n_entities = incidence.shape
    total = reset.sum()
    if total <= 0:
        return np.zeros(n_chunks + n_entities)
    reset = reset / total
    adjacency = sp.bmat([[None, incidence], [incidence.T, None]], format="csr")
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    inverse = np.divide(1.0, degree, out=np.zeros_like(degree, dtype=float), where=degree > 0)
    step = (adjacency.T.multiply(inverse)).tocsr()  # column-stochastic on nodes with edges
    dangling = degree == 0
    rank = reset.copy()
    for _ in range(max_iter):
        walked = step @ rank
        following = damping * (walked + rank[dangling].sum() * reset)
        new = following + (1 - damping) * reset
        if np.abs(new - rank).sum() < tol:
            rank = new
            break
        rank = new
    return rank


def _minmax(values: np.ndarray) -> np.ndarray:
    if values.size == 0:
        return values
    low, high = float(values.min()), float(values.max())
    return (values - low) / (high - low) if high > low else (values > 0).astype(float)


_WORD = re.compile(r"[\w][\w'’.\-]*")
_STOP_WORDS = frozenset(
    "a an and are as at be by did do does for from had has have he her his how in is it its "
    "of on or she than that the their them they this to was were what when where which who "
    "whom whose why will with".split()
)


def _capitalised(word: str) -> bool:
    return word[:1].isupper() or word[:1].isdigit()


def ngram_keys(text: str, max_words: int = 8) -> dict[str, tuple[int, int]]:
    """Entity keys of the question's name-like word n-grams (up to ``max_words``) -> word span.

    Where the question capitalises names (any capitalised word after the
    first), an n-gram must start and end with a capitalised word or a number
    ("Reaching For The Sun", not "born" or "came out"); in an all-lower-case
    question, any n-gram of two or more words that are not all stop words.
    Looked up by key in the entity collection, they find the stored entities a
    question names where NER misses them (title-cased film names).
    """
    words = [w.group(0) for w in _WORD.finditer(text)]
    matches = list(_WORD.finditer(text))
    cased = any(_capitalised(w) for w in words[1:])
    out: dict[str, tuple[int, int]] = {}
    for i in range(len(words)):
        for j in range(i + 1, min(i + max_words, len(words)) + 1):
            if cased:
                if not (_capitalised(words[i]) and _capitalised(words[j - 1])) or (i == 0 and j == 1):
                    continue
            elif j - i < 2 or all(w.casefold() in _STOP_WORDS for w in words[i:j]):
                continue
            key = normalize(text[matches[i].start() : matches[j - 1].end()])
            if key and key not in out:
                out[key] = (i, j)
    return out


def longest_matches(spans: dict[str, tuple[int, int]], found: set[str]) -> list[str]:
    """The found keys whose spans are not inside a longer found span (longest first)."""
    chosen: list[str] = []
    taken: set[int] = set()
    for key in sorted(found, key=lambda k: (spans[k][0] - spans[k][1], spans[k][0])):
        words = set(range(*spans[key]))
        if not words & taken:
            chosen.append(key)
            taken |= words
    return chosen


def link_entities(
    index: ChunkIndex,
    vectors: list[list[float]],
    exact_keys: list[str],
    *,
    limits: list[int],
    threshold: float,
) -> dict[str, dict]:
    """Stored entities matching the question: key -> row (``name``, ``chunks``, ``n``) plus
    ``similarity`` (1.0 for an exact key; else the best cosine over the vectors, each
    vector taking its ``limits[i]`` nearest entities at or above ``threshold``)."""
    fields = [NAME_FIELD, CHUNKS_FIELD, COUNT_FIELD]
    found: dict[str, dict] = {}
    for key, row in entity_rows(index, exact_keys, fields).items():
        found[key] = {**row, "similarity": 1.0}
    if vectors and max(limits, default=0) > 0:
        results = index.client.search(
            entity_collection(index.collection),
            data=vectors,
            anns_field=DENSE_FIELD,
            search_params=_DENSE_SEARCH,
            limit=max(limits),
            output_fields=fields,
        )
        for hits, limit in zip(results, limits, strict=True):
            for hit in list(hits)[:limit]:
                similarity = float(hit["distance"])
                key = hit.get(PRIMARY_FIELD) or hit.get("id")
                if similarity >= threshold and similarity > found.get(key, {}).get("similarity", 0.0):
                    found[key] = {**hit["entity"], "similarity": similarity}
    return found


def _chunk_rows(index: ChunkIndex, ids: list[str], expr: str | None, fields: list[str]) -> dict[str, dict]:
    """Stored chunks by id that pass ``expr`` (the rest: deleted or hidden, are left out)."""
    out: dict[str, dict] = {}
    for i in range(0, len(ids), _LOOKUP_BATCH):
        rows = index.client.query(
            index.collection, filter=all_of(in_filter(ids[i : i + _LOOKUP_BATCH]), expr), output_fields=fields
        )
        out.update((r[PRIMARY_FIELD], r) for r in rows)
    return out


def graph_search(
    index: ChunkIndex,
    query: str,
    *,
    k: int = 5,
    expr: str | None = None,
    mode: Literal["dense", "hybrid"] = "hybrid",
    dense_hits: list[tuple[Document, float]] | None = None,
    dense_k: int = 20,
    extractor: Extractor | None | Literal["default"] = "default",
    link_k: int = 3,
    query_link_k: int = 5,
    link_threshold: float = 0.75,
    max_ngram: int = 8,
    max_seeds: int = 20,
    damping: float = 0.5,
    passage_weight: float = 0.05,
    neighbourhood: int = 1000,
    expand: bool = True,
    hub_chunks: int = 100,
    blend: float = 0.5,
) -> GraphHits:
    """The top ``k`` chunks for ``query`` by Personalized PageRank blended with dense/hybrid scores.

    Args:
        index: the chunk collection (its entity collection built by ``build_graph`` or ingest).
        k: chunks returned.
        expr: a Milvus filter (access control) applied to every chunk read.
        mode: ``dense`` or ``hybrid`` search for the first hits (when ``dense_hits`` is None).
        dense_hits: hits the caller already has (``ChunkIndex.search`` output), reused.
        dense_k: how many dense/hybrid hits join the neighbourhood and the blend.
        extractor: question mention extractor; ``"default"`` is spaCy NER when
            installed; None matches the whole question only.
        link_k: nearest entities per question mention.
        query_link_k: nearest entities to the whole question.
        link_threshold: cosine similarity an embedding match needs to seed the walk.
        max_ngram: question word n-grams up to this length are looked up as entity keys
            (the longest found ones seed the walk); 0 turns this off.
        max_seeds: seeds kept (the highest match similarity first).
        damping: probability of following an edge at each step (HippoRAG: 0.5).
        passage_weight: restart weight of the dense hits, relative to the seeds' total.
        neighbourhood: most chunks in the walked graph.
        expand: also walk the chunks that share an entity with the first chunks (a second hop).
        hub_chunks: entities in more chunks than this are hubs: left out of the walk
            (they link everything; HippoRAG's specificity weights them ~0 anyway).
        blend: weight of the PPR score against the dense/hybrid score (1: graph only).

    Without an entity collection, or with no seed found, this is the dense/hybrid ranking.
    """
    clock = time.perf_counter()
    timings: dict[str, float] = {}

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[name] = (now - clock) * 1000
        clock = now

    if dense_hits is None:
        dense_hits = index.search(query, k=max(k, dense_k), mode=mode, expr=expr)
    dense_hits = list(dense_hits)
    lap("search")
    result = GraphHits(hits=dense_hits[:k], milliseconds=timings)
    if not has_graph(index):
        return result
    if extractor == "default":
        extractor = question_extractor()
    mentions = [m for m in (extractor([query])[0] if extractor else []) if normalize(m)]
    result.mentions = mentions
    vectors = embed_queries(index.embeddings, [query, *mentions])
    lap("mentions")
    keys = [normalize(m) for m in mentions]
    exact = entity_rows(index, keys, [NAME_FIELD, CHUNKS_FIELD, COUNT_FIELD])
    unmatched = [i for i, key in enumerate(keys) if key not in exact]  # only these are matched by meaning
    matched = link_entities(
        index,
        ([vectors[0]] if query_link_k else []) + [vectors[1 + i] for i in unmatched],
        [],
        limits=([query_link_k] if query_link_k else []) + [link_k] * len(unmatched),
        threshold=link_threshold,
    )
    for key, row in exact.items():
        matched[key] = {**row, "similarity": 1.0}
    if max_ngram:
        spans = ngram_keys(query, max_ngram)
        named = entity_rows(index, list(spans), [NAME_FIELD, CHUNKS_FIELD, COUNT_FIELD])
        for key in longest_matches(spans, set(named)):
            matched[key] = {**named[key], "similarity": 1.0}
    seeds = dict(sorted(matched.items(), key=lambda kv: -kv[1]["similarity"])[:max_seeds])
    lap("link")

    # The neighbourhood, read from the store by key: the seeds' chunks and the dense hits
    # (with their entities), then the chunks that share a non-hub entity with them.
    edges: dict[str, list[str]] = {
        str(d.id): list(d.metadata.get(ENTITIES_FIELD) or []) for d, _ in dense_hits
    }
    first = [c for row in seeds.values() for c in (row.get(CHUNKS_FIELD) or []) if c not in edges]
    first = list(dict.fromkeys(first))[: max(neighbourhood - len(edges), 0)]
    for cid, row in _chunk_rows(index, first, expr, [PRIMARY_FIELD, ENTITIES_FIELD]).items():
        edges[cid] = list(row.get(ENTITIES_FIELD) or [])
    frontier = list(dict.fromkeys(e for ents in edges.values() for e in ents if e not in seeds))
    info = entity_rows(index, frontier, [CHUNKS_FIELD, COUNT_FIELD]) if frontier else {}
    hubs = {key for key, row in info.items() if int(row.get(COUNT_FIELD) or 0) > hub_chunks}
    if expand and len(edges) < neighbourhood:
        second: dict[str, list[str]] = {}
        for key, row in info.items():
            if key not in hubs:
                for cid in row.get(CHUNKS_FIELD) or []:
                    if cid not in edges:
                        second.setdefault(cid, []).append(key)
        ids = list(second)[: neighbourhood - len(edges)]
        for cid in _chunk_rows(index, ids, expr, [PRIMARY_FIELD]):
            edges[cid] = second[cid]
    lap("neighbourhood")

    import scipy.sparse as sp

    chunk_ids = list(edges)
    entity_ids: dict[str, int] = {}
    rows, cols = [], []
    for row, cid in enumerate(chunk_ids):
        for key in dict.fromkeys(edges[cid]):
            if key not in hubs:
                rows.append(row)
                cols.append(entity_ids.setdefault(key, len(entity_ids)))
    incidence = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(chunk_ids), len(entity_ids)))
    visible = np.asarray(incidence.sum(axis=0)).ravel()
    reset = np.zeros(len(chunk_ids) + len(entity_ids))
    used_seeds = []
    for key, row in seeds.items():
        column = entity_ids.get(key)
        if column is None:  # no chunk the caller may see holds it
            continue
        listed = len(row.get(CHUNKS_FIELD) or [])
        count = visible[column] if int(row.get(COUNT_FIELD) or 0) <= listed else int(row[COUNT_FIELD])
        weight = row["similarity"] / max(count, 1.0)
        reset[len(chunk_ids) + column] = weight
        used_seeds.append((row.get(NAME_FIELD) or key, weight))
    position = {cid: i for i, cid in enumerate(chunk_ids)}
    dense_ids = [str(d.id) for d, _ in dense_hits]
    dense_scores = _minmax(np.array([s for _, s in dense_hits], dtype=float))
    seed_total = reset.sum()
    if seed_total > 0 and passage_weight > 0 and dense_ids:
        share = dense_scores / max(dense_scores.sum(), 1e-12) * passage_weight * seed_total
        for cid, weight in zip(dense_ids, share, strict=True):
            reset[position[cid]] += weight
    result.seeds = sorted(used_seeds, key=lambda s: -s[1])
    result.chunks, result.entities = len(chunk_ids), len(entity_ids)
    if seed_total <= 0:
        return result
    rank = personalized_pagerank(incidence, reset, damping=damping)[: len(chunk_ids)]
    lap("ppr")

    dense_part = np.zeros(len(chunk_ids))
    for cid, score in zip(dense_ids, dense_scores, strict=True):
        dense_part[position[cid]] = score
    final = blend * _minmax(rank) + (1 - blend) * dense_part
    order = np.argsort(-final, kind="stable")[:k]
    top = [chunk_ids[i] for i in order]
    known = {str(d.id): d for d, _ in dense_hits}
    fetched = {str(d.id): d for d in index.get([c for c in top if c not in known])}
    result.hits = [
        ((known.get(cid) or fetched[cid]), float(final[i]))
        for cid, i in zip(top, order, strict=True)
        if cid in known or cid in fetched
    ]
    lap("fetch")
    return result
