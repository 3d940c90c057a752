"""The cross-question search cache: repeated searches are served from memory, a bounded LRU,
any ingest or delete invalidates it, 0 turns it off, a bad size names the setting."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.documents import Document
from pydantic import ValidationError

from rag_graphs.config.context import RagContext
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.methods.naive import graph
from rag_graphs.search.cache import SEARCHES, SearchCache
from rag_graphs.search.retrieval import search_many

QUESTION = "Where was Ilsa Brandt born?"


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    # the cache holds dense and hybrid searches (graph search is not cached): the demo corpus
    # is ingested with its entity graph, where the default search_mode=auto walks it
    monkeypatch.setenv("RAG_GRAPHS_SEARCH_MODE", "hybrid")
    SEARCHES.clear()
    yield
    SEARCHES.clear()


def test_lru_evicts_least_recently_used_and_counts_hits() -> None:
    cache = SearchCache(size=2)
    searched: list[str] = []

    def run(keys: list[str]):
        def search(positions: list[int]):
            searched.extend(keys[i] for i in positions)
            return [[(Document(id=keys[i], page_content=keys[i]), 1.0)] for i in positions]

        return cache.many(list(keys), search)

    run(["a", "b"])
    _, cached = run(["a", "c"])  # "a" is used again, so "b" is the least recent and goes
    assert cached == [True, False]
    _, cached = run(["b", "a"])
    assert cached == [False, True]
    assert searched == ["a", "b", "c", "b"]
    assert cache.stats()["hits"] == 2
    hit, _ = run(["b"])
    hit[0][0][0].metadata["edited"] = True  # a caller's edit never reaches the cached ranking
    again, _ = run(["b"])
    assert "edited" not in again[0][0][0].metadata


def test_rerun_hits_cache_and_ingest_invalidates_it(make_context, loaded, tmp_path: Path) -> None:
    ctx = make_context()
    first = search_many(ctx, [QUESTION])[0]
    second = search_many(ctx, ["  where was ILSA brandt born? "])[0]  # same query, normalised
    assert [d.id for d in second] == [d.id for d in first]
    assert all(d.metadata.get("cached") for d in second)
    assert not any(d.metadata.get("cached") for d in first)
    assert SEARCHES.stats()["hit_rate"] == 0.5

    before = search_many(ctx, ["Quellmark harbour town"])[0]
    assert not any("Quellmark" in d.page_content for d in before)
    assert all(d.metadata.get("cached") for d in search_many(ctx, ["Quellmark harbour town"])[0])
    extra = tmp_path / "extra" / "brandt.md"
    extra.parent.mkdir()
    extra.write_text("# Ilsa Brandt\n\nIlsa Brandt was born in the harbour town of Quellmark.\n")
    ingest([extra], index=loaded, options=IngestOptions(progress=False))
    after = search_many(ctx, ["Quellmark harbour town"])[0]
    assert not any(d.metadata.get("cached") for d in after)  # the ingest invalidated the entry
    assert any("Quellmark" in d.page_content for d in after)


def test_delete_invalidates_and_zero_turns_cache_off(make_context, loaded) -> None:
    ctx = make_context()
    search_many(ctx, [QUESTION])
    source = search_many(ctx, [QUESTION])[0][0].metadata["source"]
    loaded.delete_source(source)
    assert not any(d.metadata.get("cached") for d in search_many(ctx, [QUESTION])[0])

    off = make_context(search_cache=0)
    search_many(off, ["Korvik"])
    assert not any(d.metadata.get("cached") for d in search_many(off, ["Korvik"])[0])


def test_graph_steps_name_the_cache_hit(make_context, loaded) -> None:
    graph.invoke({"question": QUESTION}, context=make_context("first answer"))
    out = graph.invoke({"question": QUESTION}, context=make_context("second answer"))
    assert any("search cache hit" in s.get("text", "") for s in out["steps"])


def test_bad_size_names_the_setting(monkeypatch) -> None:
    with pytest.raises(ValidationError, match="search_cache"):
        RagContext(search_cache=-1)
    monkeypatch.setenv("RAG_GRAPHS_SEARCH_CACHE", "lots")
    with pytest.raises(ValidationError, match="RAG_GRAPHS_SEARCH_CACHE"):
        RagContext()
