"""Graph search: Personalized PageRank over the chunk-entity neighbourhood of a question.

HippoRAG (Gutierrez et al. 2024), adapted to a graph kept in Milvus, as four stages, each its
own module, passing small typed values (``GraphSearchOptions`` says how; ``RagContext.graph_search``
holds one):

1. **Link the question** (``linking.link_question`` -> ``LinkedQuestion``): its entities by
   mention (spaCy NER), by name-like n-gram and by meaning (nearest entity names). Meanwhile
   the **first searches** run in a worker thread (``first_search.first_searches`` ->
   ``FirstHits``): the dense hits that seed the walk and, when hybrid's top is protected, hybrid
   search's ranking; without a filter both run in process over the store state's copy of the
   chunks (``store.mirror``, ``store.bm25``; ``GraphSearchOptions.in_process``).
2. **Read the neighbourhood** (``neighbourhood.fetch_neighbourhood`` -> ``Neighbourhood``): by
   key, through the caller's filter, the seeds' chunks and the first hits, then the chunks one
   non-hub entity away.
3. **Walk** (``walk.walk`` -> ``Walk``): PPR restarting at the seeds by specificity and, a little,
   at the dense hits.
4. **Rank** (``rank.rank``): by the walk, hybrid's first hits kept on top and inside the top
   ``k``; then, by default, the learned ranker re-orders that ranking's first 30, the first hits
   and a second, LLM-free hop's passages (``candidates.bridge_hop``: walked ones past the first 30
   that hold an entity of the first hop's passages the question does not name)
   (``learned_rank.learned_ranking`` over ``candidates.FEATURES``); the top ``k`` as
   ``(Document, score)``.

Without an entity graph, or with no seed the caller can see, the result is the first ranking
(hybrid's when protected, else dense).
"""

from __future__ import annotations

import time
from collections.abc import Hashable
from dataclasses import dataclass, field

from langchain_core.documents import Document

from rag_graphs.config.graph_search import GraphSearchOptions
from rag_graphs.entity_graph.entity_copy import entity_copy
from rag_graphs.entity_graph.first_search import first_searches, plain_ranking
from rag_graphs.entity_graph.learned_rank import RankInputs, learned_ranking, shipped_ranker
from rag_graphs.entity_graph.linking import link_question
from rag_graphs.entity_graph.name_search import name_vectors
from rag_graphs.entity_graph.neighbourhood import fetch_neighbourhood
from rag_graphs.entity_graph.rank import documents_of, rank
from rag_graphs.entity_graph.rows import graph_rows, graph_state, has_graph
from rag_graphs.entity_graph.walk import walk
from rag_graphs.store.index import ChunkIndex
from rag_graphs.store.mirror import chunk_mirror
from rag_graphs.store.reads import embed_queries

DENSE_K = 20
"""First hits per search (at least ``k``): they join the neighbourhood and restart the walk, so a
passage the question describes well is walked even when it names no seed (HippoRAG 2's passage
nodes); 20 keeps the two first searches and the neighbourhood reads cheap."""


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


class Laps:
    """Milliseconds per stage, by name, in the order the stages ran (``GraphHits.milliseconds``)."""

    def __init__(self) -> None:
        self.milliseconds: dict[str, float] = {}
        self._clock = time.perf_counter()

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.milliseconds[name] = (now - self._clock) * 1000
        self._clock = now


def graph_search(
    index: ChunkIndex,
    query: str,
    *,
    k: int = 5,
    expr: str | None = None,
    options: GraphSearchOptions | None = None,
    state: Hashable | None = None,
) -> GraphHits:
    """The top ``k`` chunks for ``query`` by Personalized PageRank over its graph neighbourhood.

    Args:
        index: the chunk collection (its entity collection built by ``build_graph`` or ingest).
        k: chunks returned; at most ``k - 1`` of ``options.keep_in_top`` apply, so the walk
            always has a place.
        expr: a Milvus filter (access control) applied to every chunk read.
        options: how it links, walks and ranks (default: ``GraphSearchOptions()``, which reads
            ``RAG_GRAPHS_GRAPH_*``).
        state: the store's ``graph_state`` as the caller just read it (the search cache keys on
            it), so its reads go through that state's row cache; None reads it here.

    Every thread it starts has ended when it returns or raises.
    """
    options = options if options is not None else GraphSearchOptions()
    laps = Laps()
    hybrid = options.protects_hybrid()
    if not has_graph(index):
        hits = plain_ranking(index, query, k=k, expr=expr, hybrid=hybrid)
        return GraphHits(hits=list(hits)[:k], milliseconds=laps.milliseconds)
    # its reads by key, through its store state's cache; the state is read before the first
    # searches start (read beside them, it waited for them in Milvus Lite: +7-12 ms)
    rows = graph_rows(index, state)
    mirror = names = None
    if expr is None and options.in_process and rows.unfiltered():
        # the dense search over this state's in-process copy (``store.mirror``), keyed as the rows
        if rows.cache is not None:
            state = rows.cache.state
        mirror = chunk_mirror(index, state if state is not None else graph_state(index))
        rows.mirror = mirror  # its chunk reads too: the same state's rows, no cache miss asks Milvus
        if mirror is not None:  # and its entity reads, from the same state's copy of them
            rows.entity_copy = entity_copy(index, mirror.state)
            # and the nearest names of a mention no key matches (read in the background: None
            # until then, and below ``name_search.MIN_SEARCHED_ENTITIES``: Milvus searches them)
            names = name_vectors(index, mirror.state, rows.entity_copy)
    vector = embed_queries(index.embeddings, [query])[0]
    first_k = max(k, DENSE_K)
    with first_searches(index, query, vector, k=first_k, expr=expr, hybrid=hybrid, mirror=mirror) as pending:
        question = link_question(
            index,
            query,
            threshold=options.link_threshold,
            limit=options.seeds,
            lap=laps,
            rows=rows,
            names=names,
        )
        laps("link")
        first = pending.result()
    laps("search")
    found = GraphHits(hits=first.ranking[:k], mentions=question.mentions, milliseconds=laps.milliseconds)
    hood = fetch_neighbourhood(
        index, question.seeds, first.hits, expr=expr, size=options.neighbourhood, rows=rows
    )
    laps("neighbourhood")
    walked = walk(
        hood, question.seeds, first.dense, damping=options.damping, title_weight=options.title_weight
    )
    found.seeds, found.chunks, found.entities = walked.seeds, len(walked.chunks), walked.entities
    if walked.probabilities is None:  # no seed in the graph: the first ranking
        return found
    laps("ppr")
    protected = [str(d.id) for d, _ in first.ranking]
    keep_in_top = max(min(options.keep_in_top, k - 1), 0)  # the walk always keeps a place
    keep = {"keep_first": options.keep_first, "keep_in_top": keep_in_top}
    if options.learned_rank:
        held = RankInputs(query, vector, first, question.seeds, hood, walked, protected, mirror)
        ranked = learned_ranking(index, shipped_ranker(), held, k=k, expr=expr, **keep)
    else:
        ranked = rank(walked.chunks, walked.probabilities, protected, k=k, **keep)
    laps("rank")  # the learned ranker's read, features and trees, when on
    found.hits = documents_of(index, ranked, first.documents(), mirror)
    laps("fetch")
    return found
