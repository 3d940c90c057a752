"""The persistent search cache: a fresh process (a new cache object, an empty LRU) is served from
the file; an ingest or delete, in this process or another, invalidates it; a file that is not
this cache is refused with an error naming the setting; a damaged entry is searched again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from pydantic import ValidationError

from rag_graphs.config.context import RagContext
from rag_graphs.search import disk_cache as disk_module
from rag_graphs.search.cache import SEARCHES
from rag_graphs.search.disk_cache import DiskCache, SearchCacheFileError
from rag_graphs.search.retrieval import search_many
from rag_graphs.store import generations as store_module

QUESTION = "Where was Ilsa Brandt born?"


@pytest.fixture(autouse=True)
def fresh_caches(monkeypatch):
    # the caches hold dense and hybrid searches (graph search is not cached): the demo corpus
    # is ingested with its entity graph, where the default search_mode=auto walks it
    monkeypatch.setenv("RAG_GRAPHS_SEARCH_MODE", "hybrid")
    SEARCHES.clear()
    disk_module._OPEN.clear()
    yield
    SEARCHES.clear()
    disk_module._OPEN.clear()


def new_process() -> None:
    """What a second process starts with: an empty LRU and no open cache file."""
    SEARCHES.clear()
    disk_module._OPEN.clear()


def counting(monkeypatch, index) -> list[str]:
    """Queries that reached the store (every ``ChunkIndex`` on it: graphs open their own)."""
    searched: list[str] = []
    real = type(index).search_many

    def spy(self, queries, **kw):
        searched.extend(queries)
        return real(self, queries, **kw)

    monkeypatch.setattr(type(index), "search_many", spy)
    return searched


def test_a_second_process_is_served_from_the_file(make_context, loaded, tmp_path, monkeypatch) -> None:
    ctx = make_context(search_cache_path=str(tmp_path / "cache.sqlite"))
    searched = counting(monkeypatch, loaded)
    first = search_many(ctx, [QUESTION])[0]
    new_process()
    again = search_many(ctx, ["  where was ILSA brandt born? "])[0]
    assert searched == [QUESTION]  # the second "process" never searched the store
    assert [d.id for d in again] == [d.id for d in first]
    assert [d.page_content for d in again] == [d.page_content for d in first]
    assert all(d.metadata.get("cached") for d in again) and not any(d.metadata.get("cached") for d in first)
    assert disk_module.disk_cache(ctx.search_cache_path or "").stats()["hits"] == 1


def test_rankings_cached_before_bm25_was_asked_other_words_are_not_served(
    make_context, loaded, tmp_path, monkeypatch
) -> None:
    ctx = make_context(search_cache_path=str(tmp_path / "cache.sqlite"))
    searched = counting(monkeypatch, loaded)
    search_many(ctx, [QUESTION])
    new_process()
    monkeypatch.setattr(type(loaded), "bm25_stop_words", frozenset())  # e.g. an older version's BM25 query
    search_many(ctx, [QUESTION])
    assert searched == [QUESTION, QUESTION]  # searched again, not served the other ranking


def test_ingest_and_delete_invalidate_it(make_context, loaded, tmp_path, monkeypatch) -> None:
    ctx = make_context(search_cache_path=str(tmp_path / "cache.sqlite"))
    searched = counting(monkeypatch, loaded)
    search_many(ctx, [QUESTION])
    note = tmp_path / "docs" / "note.txt"
    note.parent.mkdir()
    note.write_text("Ilsa Brandt later moved to Lunmar.")
    from rag_graphs.ingestion import IngestOptions, ingest

    ingest([note], index=loaded, options=IngestOptions(progress=False))
    new_process()
    search_many(ctx, [QUESTION])
    assert searched == [QUESTION, QUESTION]  # the ingest made the stored ranking unreachable
    loaded.delete_source(next(s for s in loaded.sources() if s.endswith("note.txt")))
    new_process()
    search_many(ctx, [QUESTION])
    assert len(searched) == 3


def test_a_change_another_process_made_is_seen(make_context, loaded, tmp_path, monkeypatch) -> None:
    """Another process's delete bumps no generation here; the stored fingerprint still changes."""
    ctx = make_context(search_cache_path=str(tmp_path / "cache.sqlite"))
    searched = counting(monkeypatch, loaded)
    search_many(ctx, [QUESTION])
    before = loaded.fingerprint()
    generations = dict(store_module._GENERATIONS)
    victim = next(iter(loaded.sources()))
    loaded.delete_source(victim)
    monkeypatch.setattr(store_module, "_GENERATIONS", generations)  # as if done elsewhere
    assert loaded.fingerprint() != before
    search_many(ctx, [QUESTION])  # the LRU too keys on the fingerprint when the file is set
    assert searched == [QUESTION, QUESTION]


def test_a_file_that_is_not_the_cache_is_refused(tmp_path: Path, monkeypatch) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database at all, just text" * 10)
    with pytest.raises(ValidationError, match="RagContext.search_cache_path=.*not a search cache file"):
        RagContext(search_cache_path=str(junk))
    with pytest.raises(SearchCacheFileError, match="RagContext.search_cache_path"):
        DiskCache(junk)
    assert junk.read_bytes().startswith(b"this is not")  # never overwritten
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE rag_graphs_search (something TEXT)")
    with pytest.raises(SearchCacheFileError, match="not a usable search cache file"):
        DiskCache(other)
    with pytest.raises(ValidationError, match="is a folder"):
        RagContext(search_cache_path=str(tmp_path))
    monkeypatch.setenv("RAG_GRAPHS_SEARCH_CACHE_PATH", str(junk))
    with pytest.raises(ValidationError, match="RAG_GRAPHS_SEARCH_CACHE_PATH"):
        RagContext()
    assert RagContext(search_cache_path="none").search_cache_path is None


def test_a_damaged_entry_is_searched_again(make_context, loaded, tmp_path, monkeypatch) -> None:
    path = tmp_path / "cache.sqlite"
    ctx = make_context(search_cache_path=str(path))
    searched = counting(monkeypatch, loaded)
    first = search_many(ctx, [QUESTION])[0]
    with sqlite3.connect(path) as db:
        db.execute("UPDATE rag_graphs_search SET ranking = '{broken'")
    new_process()
    again = search_many(ctx, [QUESTION])[0]
    assert searched == [QUESTION, QUESTION] and [d.id for d in again] == [d.id for d in first]
    new_process()
    search_many(ctx, [QUESTION])
    assert len(searched) == 2  # the entry was written again
