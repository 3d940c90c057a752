"""``GraphSearchOptions``: graph search's settings as one frozen, typed value.

Graph search (the default engine on a collection with an entity graph) links the question to
stored entities, reads their neighbourhood from the store, walks it by Personalized PageRank and
ranks the walked chunks under hybrid search's confident top (``rag_graphs.entity_graph``). Its
settings travel as this one object, from ``RagContext.graph_search`` to the walk, in the way
Docling's pipeline options do: checked when built, hashable (the search plan and the cache key on
it), each read from ``RAG_GRAPHS_GRAPH_<NAME>`` when not given. Only settings that measured a gain
are here (BENCHMARKS.md, issues 21-28); the constants of the walk are in ``rag_graphs.entity_graph``.
"""

from __future__ import annotations

from pydantic import ConfigDict
from pydantic.dataclasses import dataclass

from rag_graphs.config.fields import Fraction, NonNegative, Positive, Weight, _env


@dataclass(
    frozen=True,
    kw_only=True,
    config=ConfigDict(
        validate_default=True,
        extra="forbid",
        use_attribute_docstrings=True,
    ),
)
class GraphSearchOptions:
    """How graph search links, walks and ranks (``RagContext.graph_search``)."""

    damping: Fraction = _env("RAG_GRAPHS_GRAPH_DAMPING", 0.6)
    """Probability of following an edge at each PageRank step (HippoRAG: 0.5); the rest restarts at
    the question's entities. 0.6 measured best on 2Wiki/MuSiQue/HotpotQA dev (BENCHMARKS.md)."""

    neighbourhood: Positive = _env("RAG_GRAPHS_GRAPH_NEIGHBOURHOOD", 300)
    """Most chunks fetched from the store around the question's entities and first hits (the walk
    never loads the whole store). Each chunk and entity read costs ~0.06 ms in Milvus Lite; 300
    gave the same R@5 as 500 on 2Wiki/MuSiQue/HotpotQA dev."""

    seeds: Positive = _env("RAG_GRAPHS_GRAPH_SEEDS", 20)
    """Most entities the walk restarts at (the best-matching question entities)."""

    link_threshold: Fraction = _env("RAG_GRAPHS_GRAPH_LINK_THRESHOLD", 0.75)
    """Cosine similarity a stored entity name needs to a question mention (or the question) to
    seed the walk. A MiniLM number: retune it for another embedding model."""

    keep_first: NonNegative = _env("RAG_GRAPHS_GRAPH_KEEP_FIRST", 1)
    """Hybrid search's first ``n`` hits stay on top, in their order; the walk orders the rest (0: the
    walk orders all). 1, with ``keep_in_top=2``, was chosen on the tune halves of MuSiQue, 2Wiki
    and HotpotQA dev (BENCHMARKS.md, issue 28): on the check halves R@2 above hybrid on all three
    and per-question R@5 losses against hybrid 8.4% / 0.8% / 7.6%, where the walk alone lost
    12.6% / 0% / 14.3%. Above 0 (or ``keep_in_top`` above 0), graph search also runs one BM25
    search to rank as hybrid does (dense hits seed the walk)."""

    keep_in_top: NonNegative = _env("RAG_GRAPHS_GRAPH_KEEP_IN_TOP", 2)
    """Hybrid search's first ``n`` hits are never pushed out of the top ``k`` (one the walk ranked
    lower takes the walk's last other place there); 0: no such floor. At most ``k - 1`` apply, so
    the walk always has a place."""

    title_weight: Weight = _env("RAG_GRAPHS_GRAPH_TITLE_WEIGHT", 5.0)
    """Weight of a passage's edge to an entity its title or headings name (every other edge weighs
    1), so a walk that reaches an entity goes on mostly to the passage about it, e.g. from
    "directed by Henry King" to the page "Henry King (director)". 1: off. 5 chosen on the tune
    halves (mean R@5 +2.4 over 1, from 2, 3, 4, 5, 8); check halves in BENCHMARKS.md."""

    learned_rank: bool = _env("RAG_GRAPHS_GRAPH_LEARNED_RANK", True)
    """Order the candidates (today's first 30 by the walk under ``keep_first`` and ``keep_in_top``,
    the first hits and up to 5 walked passages holding a bridge entity of the first hop) by the
    shipped learned ranker (``rag_graphs.entity_graph.learned_rank``: LightGBM lambdarank trees
    over the walk's, dense, BM25, hybrid and entity signals), whose order is final: hybrid's top is
    one of its signals, not kept by force. On the check halves of MuSiQue, 2Wiki and HotpotQA dev
    R@5 74.7 / 94.4 / 93.5 against 67.9 / 90.7 / 88.8 without it, R@2 above hybrid on all three,
    p50 9-22 ms more per search under load (BENCHMARKS.md, issue 47).
    False: the walk's order under ``keep_first`` and ``keep_in_top``."""

    in_process: bool = _env("RAG_GRAPHS_GRAPH_IN_PROCESS", True)
    """Graph search, when it has no filter and the store is a Milvus Lite path, searches and reads
    the store state's in-process copy of the chunks (``rag_graphs.store.mirror``: rows, vectors and
    BM25 weights, read once per state, ~4-5 s per 10,000 chunks): its first dense search (exact
    cosine in ~1 ms where Milvus Lite's HNSW search, approximate, took ~27 ms), its first BM25
    search (~1 ms where Milvus Lite's took ~35-45 ms at 21k passages; statistics over the live rows
    where Milvus Lite counts superseded rows per segment), the neighbourhood's chunk reads, the
    learned ranker's pool read and the final fetch. p50 at 21k passages ~130 -> ~65 ms; rankings
    identical on the evaluator's three dev stores (BENCHMARKS.md, "Graph search's first searches in
    process" and "Graph search in process, round 5"). False: Milvus searches and reads, as before;
    a filtered search always does."""

    def protects_hybrid(self) -> bool:
        """True when hybrid search's ranking is needed (``keep_first``, ``keep_in_top`` or the learned
        ranker, which reads it): graph search then ranks the first hits as hybrid search does, beside
        the dense hits that seed it."""
        return self.keep_first > 0 or self.keep_in_top > 0 or self.learned_rank

    @classmethod
    def env_vars(cls) -> dict[str, str]:
        """Option name -> environment variable that sets its default."""
        from dataclasses import fields

        return {f.name: f.metadata["env"] for f in fields(cls) if "env" in f.metadata}
