"""Graph search: Personalized PageRank over the chunk-entity neighbourhood of a question.

The steps (HippoRAG, Gutierrez et al. 2024, adapted to a graph kept in Milvus):

1. **Seeds** (``rag_graphs.entity_graph.linking``): the question's entities, by mention
   (spaCy NER), by name-like n-gram and by meaning (nearest entity names).
   A seed's restart weight is its match similarity times its *specificity*,
   1 / (number of chunks holding it): a rare entity says more about where
   the answer is (HippoRAG's node specificity).
2. **Neighbourhood** (``neighbourhood.fetch_neighbourhood``): read from Milvus by key, never
   by scanning and never the whole store: the seeds' chunks and the
   dense/hybrid hits with their entities, then the chunks sharing a non-hub
   entity with those (the second hop). Every chunk read carries the caller's
   filter ``expr``, so the walk never sees a chunk the caller may not.
3. **Walk**: PPR by power iteration on scipy sparse matrices over the
   bipartite chunk-entity graph, restarting at the seeds and, with weight
   ``passage_weight``, at the dense hits (HippoRAG 2's passage nodes).
4. **Rank**: chunks by PPR probability (``blend`` < 1 mixes in the
   normalised dense/hybrid score); the top ``k`` as ``(Document, score)``,
   with the seeds and the neighbourhood's size for a reasoning step.

scipy rather than networkx: on a 1,000-chunk neighbourhood one walk takes
~2 ms as sparse matrix-vector products, against ~40 ms for building a
networkx graph and running its pagerank (``bench/graph_retrieval.py --ppr``).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from langchain_core.documents import Document

from rag_graphs.entity_graph.entities import Extractor, normalize
from rag_graphs.entity_graph.facts import search_facts
from rag_graphs.entity_graph.linking import (
    first_searches,
    named_seeds,
    nearest_entities,
    question_extractor,
    search_with_vector,
)
from rag_graphs.entity_graph.neighbourhood import cosines, fetch_neighbourhood, question_facts
from rag_graphs.entity_graph.rows import CHUNKS_FIELD, COUNT_FIELD, NAME_FIELD, has_graph
from rag_graphs.entity_graph.walk import (
    build_walk_graph,
    fuse,
    keep_within,
    pagerank,
    passage_resets,
    protect_first,
    restart_shares,
)
from rag_graphs.store.index import ChunkIndex
from rag_graphs.store.reads import embed_queries


@dataclass
class GraphHits:
    """A graph search's ranking and what produced it (for a reasoning step or a trace)."""

    hits: list[tuple[Document, float]]
    seeds: list[tuple[str, float]] = field(default_factory=list)  # entity name, restart weight
    mentions: list[str] = field(default_factory=list)  # what the question extractor found
    chunks: int = 0  # chunk nodes in the walked neighbourhood
    entities: int = 0  # entity nodes in the walked neighbourhood
    facts: int = 0  # fact (sentence) nodes in the walked neighbourhood
    milliseconds: dict[str, float] = field(default_factory=dict)

    def describe(self) -> str:
        seeds = ", ".join(f"{name} ({weight:.2f})" for name, weight in self.seeds[:8]) or "none"
        return (
            f"graph search: seeds {seeds}; neighbourhood {self.chunks} chunks, {self.entities} entities, "
            f"{self.facts} facts"
        )


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

    adjacency = sp.bmat([[None, incidence], [incidence.T, None]], format="csr")
    return pagerank(adjacency, reset, damping=damping, tol=tol, max_iter=max_iter)


def _minmax(values: np.ndarray) -> np.ndarray:
    if values.size == 0:
        return values
    low, high = float(values.min()), float(values.max())
    return (values - low) / (high - low) if high > low else (values > 0).astype(float)


def graph_search(
    index: ChunkIndex,
    query: str,
    *,
    k: int = 5,
    expr: str | None = None,
    mode: Literal["dense", "hybrid"] = "dense",
    dense_hits: list[tuple[Document, float]] | None = None,
    dense_k: int = 20,
    extractor: Extractor | None | Literal["default"] = "default",
    link_k: int = 3,
    query_link_k: int = 0,
    link_threshold: float = 0.75,
    max_ngram: int = 8,
    max_seeds: int = 20,
    damping: float = 0.6,
    passage_weight: float = 0.05,
    neighbourhood: int = 300,
    expand: bool = True,
    hub_chunks: int = 100,
    blend: float = 1.0,
    fact_k: int = 0,
    fact_weight: float = 1.0,
    fact_node_weight: float = 0.0,
    fact_relative: bool = False,
    fact_below: int = 0,
    hybrid_weight: float = 0.0,
    fuse_k: int = 60,
    fuse_hits: list[tuple[Document, float]] | None = None,
    fuse_mode: Literal["dense", "hybrid"] | None = None,
    fuse_depth: int = 0,
    keep_first: int = 0,
    keep_in_top: int = 0,
    passage_node_weight: float = 0.0,
    title_weight: float = 1.0,
) -> GraphHits:
    """The top ``k`` chunks for ``query`` by Personalized PageRank over its graph neighbourhood.

    Args:
        index: the chunk collection (its entity collection built by ``build_graph`` or ingest).
        k: chunks returned.
        expr: a Milvus filter (access control) applied to every chunk read.
        mode: ``dense`` or ``hybrid`` search for the first hits (when ``dense_hits`` is None).
        dense_hits: the first hits when the caller has them (``ChunkIndex.search`` output).
        dense_k: how many dense/hybrid hits join the neighbourhood and restart the walk.
        extractor: question mention extractor; ``"default"`` is spaCy NER when
            installed; None skips mentions (n-grams and the whole question still link).
        link_k: nearest entity names per mention that matches no key.
        query_link_k: nearest entity names to the whole question (0: off).
        link_threshold: cosine similarity a match by meaning needs to seed the walk.
        max_ngram: question word n-grams up to this length are looked up as entity
            keys (the longest found seed the walk); 0 turns this off.
        max_seeds: seeds kept (best match similarity first).
        damping: probability of following an edge at each step (HippoRAG: 0.5); higher
            reaches further from the seeds.
        passage_weight: restart weight of the dense hits (by their normalised scores),
            relative to the seeds' total (HippoRAG 2's passage node weight: 0.05).
        neighbourhood: most chunks in the walked graph.
        expand: also walk the chunks that share an entity with the first chunks (the
            second hop; without it, a bridge passage's neighbour is never reached).
        hub_chunks: entities in more chunks than this are hubs, left out of the walk
            (they link everything; their specificity is ~0 anyway).
        blend: weight of the PPR score against the dense/hybrid score, both min-max
            normalised (1: PPR only; the dense hits still restart the walk).
        fact_k: sentences most similar to the question taken as facts (``rag_graphs.entity_graph.facts``;
            needs the collection's sentence rows, else ignored; 0: off). Each becomes a node
            linked to its passage and the entities it names, its passage joins the
            neighbourhood, and those entities are seeded with the fact's similarity.
        fact_weight: a fact-reached entity's match similarity relative to a named one (1.0);
            its restart weight is then divided by its chunk count like any seed's.
        fact_node_weight: restart weight of the fact nodes themselves (by similarity),
            relative to the seeds' total (0: they only carry the walk).
        fact_relative: a fact's similarity min-max normalised over the question's ``fact_k``
            facts before it seeds (the closest 1, the least close 0: HippoRAG 2's normalised
            fact scores); False: its raw cosine. Hub entities (``hub_chunks``) are never
            seeded through a fact.
        fact_below: facts only for a question with fewer than this many seeds by name and by
            meaning (a question that names its entities is seeded by them alone); 0: always.
        hybrid_weight: never-lose fusion: the final ranking is weighted reciprocal rank fusion
            of the walk's ranking (weight 1) and the first dense/hybrid ranking (this weight);
            0 keeps the walk's ranking (with ``blend``).
        fuse_k: the fusion's rank constant.
        fuse_hits: the ranking fused with the walk when it is not the first hits (dense first
            hits seed the walk better, a hybrid ranking is the one not to lose to).
        fuse_mode: when ``fuse_hits`` is None, search this way (``dense_k`` hits, in parallel
            with the linking) for the ranking fused with and protected by ``keep_first`` (None:
            the first hits). ``"hybrid"`` with dense first hits: dense hits seed the walk,
            hybrid's ranking is the one not to lose to.
        fuse_depth: only the first this many of that ranking take part in the fusion (0: all),
            so hybrid's confident top is protected while its tail cannot push the walk's finds
            out of the top ``k``.
        keep_first: the first this many of that ranking (``fuse_hits``, else the first hits) stay
            at the top of the result in their order; the walk (fused, if ``hybrid_weight``)
            orders everything below them (0: off).
        keep_in_top: the first this many of that ranking are kept inside the top ``k``: one the
            walk ranked lower replaces the walk's last other hit there (0: off). With
            ``keep_first`` 1: hybrid's first hit first, its next ones never pushed out.
        passage_node_weight: HippoRAG 2's passage nodes: every passage of the walked
            neighbourhood restarts with this x its cosine to the question (min-max normalised
            over the neighbourhood; HippoRAG 2: 0.05), in the seeds' absolute units (a seed
            restarts with its match similarity / its chunk count); 0: off (then only the
            first hits restart, with ``passage_weight``).
        title_weight: weight of a passage's edge to an entity its title or headings name
            (every other edge weighs 1), so the walk goes from an entity mostly to the passage
            about it: a bridge entity's own page. 1: off.

    Without an entity collection, or with no seed found, this is the dense/hybrid ranking (the
    fused or protected one, ``fuse_hits`` / ``fuse_mode``, when ``keep_first`` or ``hybrid_weight``
    is set).
    """
    clock = time.perf_counter()
    timings: dict[str, float] = {}

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[name] = (now - clock) * 1000
        clock = now

    if not has_graph(index):
        protect = (
            keep_first > 0 or keep_in_top > 0 or hybrid_weight > 0
        )  # then return the ranking not to lose to
        if protect and fuse_hits is not None:
            hits = fuse_hits
        elif protect and fuse_mode is not None:
            hits = index.search(query, k=k, mode=fuse_mode, expr=expr)
        else:
            hits = dense_hits if dense_hits is not None else index.search(query, k=k, mode=mode, expr=expr)
        return GraphHits(hits=list(hits)[:k], milliseconds=timings)
    if extractor == "default":
        extractor = question_extractor()
    # the first searches need only the question's vector: started before its NER and key
    # look-ups, they run beside them in a worker thread (as far as the GIL lets: Milvus Lite
    # runs in this process; at 21k passages they are the longest part of a graph search)
    vector = embed_queries(index.embeddings, [query])[0]
    pending = fuse_search = legs = None
    if dense_hits is None and fuse_hits is None and (mode, fuse_mode) == ("dense", "hybrid"):
        legs = first_searches(index, query, vector, k=max(k, dense_k), expr=expr)  # one dense search
    else:
        if dense_hits is None:
            pending = search_with_vector(index, query, vector, k=max(k, dense_k), mode=mode, expr=expr)
        if fuse_hits is None and fuse_mode is not None:
            fuse_search = search_with_vector(
                index, query, vector, k=max(k, dense_k), mode=fuse_mode, expr=expr
            )
    fact_search = search_facts(index, query, vector, k=fact_k, expr=expr)
    mentions = [m for m in (extractor([query])[0] if extractor else []) if normalize(m)]
    matched, unmatched = named_seeds(index, query, mentions, max_ngram=max_ngram)
    vectors = [vector, *(embed_queries(index.embeddings, unmatched) if unmatched else [])]
    lap("mentions")
    nearest = nearest_entities(
        index,
        ([vectors[0]] if query_link_k else []) + vectors[1:],
        ([query_link_k] if query_link_k else []) + [link_k] * len(unmatched),
        link_threshold,
    )
    for key, row in nearest.items():
        matched.setdefault(key, row)
    if fact_below > 0 and len(matched) >= fact_below and fact_search is not None:
        fact_search.cancel()
        fact_search = None
    facts, fact_parents = question_facts(
        index, fact_search, expr, matched, fact_weight, hub_chunks=hub_chunks, relative=fact_relative
    )
    seeds = dict(sorted(matched.items(), key=lambda kv: -kv[1]["similarity"])[:max_seeds])
    lap("link")
    if legs is not None:
        dense_hits, fuse_hits = (list(ranking) for ranking in legs.result())
    dense_hits = list(pending.result() if pending is not None else dense_hits or [])
    if fuse_search is not None:
        fuse_hits = list(fuse_search.result())
    lap("search")
    # no walk (no seed): the ranking not to lose to, when one is fused with or protected
    protected = fuse_hits is not None and (keep_first > 0 or keep_in_top > 0 or hybrid_weight > 0)
    fallback = fuse_hits if protected and fuse_hits is not None else dense_hits
    result = GraphHits(hits=fallback[:k], mentions=mentions, milliseconds=timings)
    edges, hubs, titled = fetch_neighbourhood(
        index,
        seeds,
        dense_hits + (fuse_hits or []),
        expr=expr,
        size=neighbourhood,
        expand=expand,
        hub_chunks=hub_chunks,
        after=fact_parents,
    )
    lap("neighbourhood")

    graph = build_walk_graph(edges, hubs, facts, titled=titled, title_weight=title_weight)
    chunk_ids, entity_ids = graph.chunks, graph.entities
    visible = Counter(key for cid in chunk_ids for key in set(edges[cid]) if key not in hubs)
    reset = np.zeros(graph.size)
    used_seeds = []
    for key, row in seeds.items():
        node = graph.entity_node(key)
        if node is None:  # no chunk the caller may see holds it
            continue
        listed = len(row.get(CHUNKS_FIELD) or [])
        count = visible[key] if int(row.get(COUNT_FIELD) or 0) <= listed else int(row[COUNT_FIELD])
        weight = row["similarity"] / max(count, 1.0)  # specificity: rare entities say more
        reset[node] = weight
        used_seeds.append((row.get(NAME_FIELD) or key, weight))
    position = {cid: i for i, cid in enumerate(chunk_ids)}
    dense_ids = [str(d.id) for d, _ in dense_hits]
    dense_scores = _minmax(np.array([s for _, s in dense_hits], dtype=float))
    seed_total = reset.sum()
    for cid, weight in zip(dense_ids, restart_shares(dense_scores, passage_weight, seed_total), strict=True):
        reset[position[cid]] += weight
    if passage_node_weight > 0:
        reset[: len(chunk_ids)] += passage_resets(cosines(index, chunk_ids, vectors[0]), passage_node_weight)
    similarity = np.array([f.similarity for f in graph.facts], dtype=float)
    for j, weight in enumerate(restart_shares(similarity, fact_node_weight, seed_total)):
        reset[graph.fact_node(j)] += weight
    result.seeds = sorted(used_seeds, key=lambda s: -s[1])
    result.chunks, result.entities, result.facts = len(chunk_ids), len(entity_ids), len(graph.facts)
    if seed_total <= 0:
        return result
    rank = pagerank(graph.adjacency, reset, damping=damping)[: len(chunk_ids)]
    lap("ppr")

    dense_part = np.zeros(len(chunk_ids))
    for cid, score in zip(dense_ids, dense_scores, strict=True):
        dense_part[position[cid]] = score
    final = blend * _minmax(rank) + (1 - blend) * dense_part
    order = np.argsort(-final, kind="stable")
    other = dense_ids if fuse_hits is None else [str(d.id) for d, _ in fuse_hits]
    if hybrid_weight > 0:
        depth = other[:fuse_depth] if fuse_depth > 0 else other
        fused = fuse([chunk_ids[i] for i in order], depth, weight=hybrid_weight, k=fuse_k)
        order = np.array([position[cid] for cid, _ in fused])
        final = np.zeros(len(chunk_ids))
        final[order] = [score for _, score in fused]
    if keep_first > 0 or keep_in_top > 0:
        scores = final[order]  # best first: handed out again in the new order
        ranked = protect_first([chunk_ids[i] for i in order], other, keep_first)
        ranked = keep_within(ranked, other, keep_in_top, k)
        order = np.array([position[cid] for cid in ranked])
        final = np.zeros(len(chunk_ids))
        final[order] = scores
    order = order[:k]
    top = [chunk_ids[i] for i in order]
    known = {str(d.id): d for d, _ in [*(fuse_hits or []), *dense_hits]}
    fetched = {str(d.id): d for d in index.get([c for c in top if c not in known])}
    result.hits = [
        ((known.get(cid) or fetched[cid]), float(final[i]))
        for cid, i in zip(top, order, strict=True)
        if cid in known or cid in fetched
    ]
    lap("fetch")
    return result
