"""Seams into graph search for its tests: the question's extractor and the first searches scripted.

Graph search takes only its options (``GraphSearchOptions``); what a test must fix besides them,
which mentions the question has and which passages the first searches return, it sets here on
the stage modules for the length of one test (``monkeypatch``).
"""

from __future__ import annotations

from langchain_core.documents import Document

from rag_graphs.config.graph_search import GraphSearchOptions
from rag_graphs.entity_graph import first_search, linking
from rag_graphs.entity_graph.entities import Extractor

Hits = list[tuple[Document, float]]

WALK_ONLY = GraphSearchOptions(keep_first=0, keep_in_top=0, title_weight=1.0, learned_rank=False)
"""The walk's own ranking: nothing of hybrid's kept on top, every edge weighing 1, no learned ranker."""


def use_extractor(monkeypatch, extractor: Extractor | None) -> None:
    """The question's mentions come from ``extractor`` (None: no mentions, n-grams still link)."""
    monkeypatch.setattr(linking, "question_extractor", lambda: extractor)


def script_first_hits(monkeypatch, dense: Hits, hybrid: Hits | None = None) -> None:
    """The first searches return ``dense`` and, when graph search asks for hybrid's ranking (it
    protects hybrid's top), ``hybrid`` (default: ``dense`` again)."""

    def scripted(index, query, vector, *, k, expr, hybrid: bool, mirror=None) -> first_search.FirstHits:
        protected = list(hybrid_hits if hybrid_hits is not None else dense) if hybrid else None
        return first_search.FirstHits(list(dense), protected)

    hybrid_hits = hybrid
    monkeypatch.setattr(first_search, "search_first_hits", scripted)
