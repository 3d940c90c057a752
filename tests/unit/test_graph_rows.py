"""Graph search's reads by key through one cache per store state (``entity_graph.rows.GraphRows``):
the same rows as the store's reads, each read once per state, a write of any kind seen by the next
search, and a filtered read always answered by the store."""

from __future__ import annotations

import threading

import pytest

from rag_graphs.entity_graph import build
from rag_graphs.entity_graph import graph_search as searching
from rag_graphs.entity_graph import rows as rows_module
from rag_graphs.entity_graph.build import add_entities, build_graph
from rag_graphs.entity_graph.entities import title_keys, title_mentions
from rag_graphs.entity_graph.graph_search import graph_search
from rag_graphs.entity_graph.linking import ENTITY_FIELDS
from rag_graphs.entity_graph.neighbourhood import fetch_neighbourhood
from rag_graphs.entity_graph.rows import CHUNKS_FIELD, COUNT_FIELD, GraphRows, entity_rows, graph_rows
from rag_graphs.serve.relabel import relabel_source
from rag_graphs.store.collection import Collection
from rag_graphs.store.fields import ENTITIES_FIELD, PRIMARY_FIELD
from tests.graph_seams import WALK_ONLY, use_extractor
from tests.unit.test_graph import PASSAGES, QUESTION, chunk, ingest, vocab_extractor

HOOD_FIELDS = [PRIMARY_FIELD, ENTITIES_FIELD, "title", "headings"]


@pytest.fixture
def stored(index, monkeypatch):
    ingest(index, [chunk(c, tenant="a", doc_hash="v1") for c in PASSAGES])  # one version of each file
    use_extractor(monkeypatch, vocab_extractor)
    return index


def count_reads(monkeypatch) -> dict[str, int]:
    """Count the store's reads by key (every ``Collection.get``), by collection kind."""
    counts = {"entities": 0, "chunks": 0}
    real = Collection.get

    def get(self, keys, fields, *, where=None):
        counts["entities" if self.name.endswith("_entities") else "chunks"] += 1
        return real(self, keys, fields, where=where)

    monkeypatch.setattr(Collection, "get", get)
    return counts


def neighbourhood(index, rows):
    """The walk's neighbourhood of the question's seed "Ilsa Brandt" and the first hit p1."""
    seed = {
        "ilsa brandt": {
            **entity_rows(index, ["ilsa brandt"], ENTITY_FIELDS)["ilsa brandt"],
            "similarity": 1.0,
        }
    }
    hits = [(d, 1.0) for d in index.get(["p1"])]
    return fetch_neighbourhood(index, seed, hits, expr=None, size=10, rows=rows)


def uncached(monkeypatch) -> None:
    """Graph search reading straight from the store, as before the cache."""
    monkeypatch.setattr(searching, "graph_rows", lambda index, state=None: GraphRows(index))


def outcome(found) -> tuple:
    return ([(d.id, round(s, 9)) for d, s in found.hits], found.seeds, found.chunks, found.entities)


def test_cached_reads_are_the_stores_reads_and_each_row_is_read_once_per_state(stored, monkeypatch):
    keys = ["velm", "no such entity", "korvik", "ilsa brandt"]
    plain = GraphRows(stored).entities(keys, ENTITY_FIELDS)
    ids = ["d3", "gone", "p2", "p1"]
    want = GraphRows(stored).chunks(ids, HOOD_FIELDS, None)
    counts = count_reads(monkeypatch)
    rows = graph_rows(stored)
    assert rows.entities(keys, ENTITY_FIELDS) == plain
    assert list(rows.entities(keys, ENTITY_FIELDS)) == ["velm", "korvik", "ilsa brandt"]  # as asked
    assert rows.entities(keys, [CHUNKS_FIELD]) == {
        k: {PRIMARY_FIELD: k, CHUNKS_FIELD: r[CHUNKS_FIELD]} for k, r in plain.items()
    }
    again = graph_rows(stored)  # the next search, same state: the same cache, absent keys included
    assert again.cache is rows.cache and again.entities(["no such entity", "velm"], [COUNT_FIELD])
    assert counts["entities"] == 1
    again.entities(["korvik"], ENTITY_FIELDS)["korvik"][CHUNKS_FIELD].append("edited by a caller")
    assert again.entities(["korvik"], ENTITY_FIELDS) == {"korvik": plain["korvik"]}

    assert rows.chunks(ids, HOOD_FIELDS, None) == want and list(want) == ["d3", "p2", "p1"]
    assert rows.chunks(ids, [PRIMARY_FIELD, "title"], None) == {
        cid: {PRIMARY_FIELD: cid, "title": row["title"]} for cid, row in want.items()
    }
    assert counts["chunks"] == 1
    assert neighbourhood(stored, rows) == neighbourhood(stored, None)


def test_a_filtered_chunk_read_always_goes_to_the_store(stored, monkeypatch):
    rows = graph_rows(stored)
    rows.chunks(list(PASSAGES), HOOD_FIELDS, None)  # every chunk cached, unfiltered
    counts = count_reads(monkeypatch)
    seen = rows.chunks(list(PASSAGES), HOOD_FIELDS, 'pk in ["p1", "d1"]')
    assert list(seen) == ["p1", "d1"] and counts["chunks"] == 1


def test_a_tenant_filter_still_hides_another_tenants_chunks_after_an_unfiltered_search(index, monkeypatch):
    docs = [chunk(c, tenant="b" if c in {"p2", "d2"} else "a") for c in PASSAGES]
    ingest(index, docs)
    use_extractor(monkeypatch, vocab_extractor)
    assert graph_search(index, QUESTION, k=6, options=WALK_ONLY).chunks == 6
    assert len(graph_rows(index).chunks(list(PASSAGES), HOOD_FIELDS, None)) == 6  # every chunk cached
    result = graph_search(index, QUESTION, k=6, expr='tenant == "a"', options=WALK_ONLY)
    assert {d.metadata["tenant"] for d, _ in result.hits} == {"a"}
    assert result.chunks == 4  # the walk never saw tenant b's chunks
    uncached(monkeypatch)
    assert outcome(graph_search(index, QUESTION, k=6, expr='tenant == "a"', options=WALK_ONLY)) == outcome(
        result
    )


def test_a_delete_after_a_search_is_seen_by_the_next_search(index, monkeypatch):
    docs = [chunk(c) for c in PASSAGES]
    docs[1].metadata["source"] = "corpus/to-delete"  # p2
    ingest(index, docs)
    use_extractor(monkeypatch, vocab_extractor)
    before = graph_search(index, QUESTION, k=6, options=WALK_ONLY)
    assert "p2" in neighbourhood(index, graph_rows(index)).edges
    assert index.delete_source("corpus/to-delete") == 1
    assert "p2" not in neighbourhood(index, graph_rows(index)).edges
    after = graph_search(index, QUESTION, k=6, options=WALK_ONLY)
    assert after.chunks == before.chunks - 1 and "p2" not in [d.id for d, _ in after.hits]
    uncached(monkeypatch)
    assert outcome(graph_search(index, QUESTION, k=6, options=WALK_ONLY)) == outcome(after)


def test_a_relabel_after_a_search_is_seen_by_the_next_search(stored, monkeypatch):
    graph_search(stored, QUESTION, k=6, options=WALK_ONLY)
    assert "p2" in neighbourhood(stored, graph_rows(stored)).edges
    assert relabel_source(stored, "corpus/Korvik", {"tenant": "b"}) == 1  # p2 stored again, a new id
    (copy,) = [d for d in stored.where('tenant == "b"')]
    hood = neighbourhood(stored, graph_rows(stored))
    assert copy.id in hood.edges and "p2" not in hood.edges  # the entity rows list the new id
    assert hood == neighbourhood(stored, None)
    mine = graph_search(stored, QUESTION, k=6, expr='tenant == "a"', options=WALK_ONLY)
    assert copy.id not in [d.id for d, _ in mine.hits] and mine.chunks == 5
    theirs = graph_search(stored, "Where is Osric Vale mayor?", k=6, expr='tenant == "b"', options=WALK_ONLY)
    assert [d.id for d, _ in theirs.hits] == [copy.id]


def test_an_entity_row_written_after_a_search_is_seen_by_the_next_search(stored):
    rows = graph_rows(stored)
    assert rows.entities(["lunmar"], [CHUNKS_FIELD])["lunmar"][CHUNKS_FIELD] == ["d1", "d2"]
    extra = chunk("d3")
    extra.metadata.update(chunk_id="d3", entities=["lunmar"])
    add_entities(stored, [extra])  # a graph build or an ingest adds d3 to Lunmar's row
    fresh = graph_rows(stored)
    assert fresh.cache is not rows.cache
    assert fresh.entities(["lunmar"], [CHUNKS_FIELD])["lunmar"][CHUNKS_FIELD] == ["d1", "d2", "d3"]


def test_a_graph_build_changes_the_state_after_its_last_chunk_write(index, monkeypatch):
    """A search between a build's last entity rows and its chunks' entities must not keep what it
    read: the chunks are written after ``add_entities`` marked the store, so the build marks it again."""
    index.add([chunk(c) for c in PASSAGES])
    after_rows = []
    real = build.add_entities

    def recorded(*args, **kwargs):
        found = real(*args, **kwargs)
        rows = graph_rows(index)
        rows.chunks(list(PASSAGES), HOOD_FIELDS, None)  # a search's reads, before the chunks' entities
        after_rows.append(rows.cache)
        return found

    monkeypatch.setattr(build, "add_entities", recorded)
    build_graph(index, vocab_extractor, progress=False)
    rows = graph_rows(index)
    assert rows.cache is not after_rows[-1]
    assert rows.chunks(["p2"], HOOD_FIELDS, None)["p2"][ENTITIES_FIELD] == ["korvik", "osric vale"]


def test_a_cache_keeps_at_most_its_bound(stored, monkeypatch):
    monkeypatch.setattr(rows_module, "MAX_CACHED_ROWS", 3)
    rows = graph_rows(stored)
    everything = rows.chunks(list(PASSAGES), HOOD_FIELDS, None)
    assert len(everything) == 6 and list(rows.cache.chunks) == ["d2", "d3", "d4"]  # the newest three
    assert rows.chunks(["p1", "d4"], HOOD_FIELDS, None) == {k: everything[k] for k in ["p1", "d4"]}


@pytest.mark.parametrize(
    "metadata",
    [
        {"title": "Henry King (director)", "headings": ["Early life", "The Sun Also Rises"]},
        {"title": "Korvik"},
        {"headings": ["Velm", 3, None]},
        {"title": ["not", "a", "string"], "headings": "Tarn"},
        {},
    ],
)
def test_title_keys_are_the_keys_of_the_title_mentions(metadata):
    from langchain_core.documents import Document

    from rag_graphs.entity_graph.entities import normalize

    mentions = title_mentions(Document(page_content="", metadata=metadata))
    assert title_keys(metadata) == {k for m in mentions if (k := normalize(m))}
    assert title_keys(metadata) == title_keys(dict(metadata))  # the second time from the memo


def test_a_search_behind_the_cache_reads_the_store_state_once_and_keys_its_rows_on_it(stored, monkeypatch):
    """The search cache reads the state for its key and hands it to graph search, whose row cache
    keys on the same state (it used to read it a second time: two more round trips a search)."""
    from rag_graphs.search.cached import CachedSearcher
    from rag_graphs.search.searchers import GraphSearcher

    want = outcome(graph_search(stored, QUESTION, k=6, options=WALK_ONLY))
    reads = []
    real = rows_module.graph_state

    def counted(index):
        reads.append(real(index))
        return reads[-1]

    monkeypatch.setattr(rows_module, "graph_state", counted)
    handed = []
    real_search = searching.graph_search

    def recorded(*args, **kwargs):
        found = real_search(*args, **kwargs)
        handed.append((kwargs["state"], outcome(found)))
        return found

    monkeypatch.setattr(searching, "graph_search", recorded)
    cached = CachedSearcher(GraphSearcher(stored, WALK_ONLY), size=8)
    (ranking,) = cached.search([QUESTION], k=6, expr=None)
    assert len(reads) == 1 and handed == [(reads[0], want)]
    assert graph_rows(stored, reads[0]).cache.state == reads[0]
    assert [(d.id, round(s, 9)) for d, s in ranking] == want[0]
    plain = GraphSearcher(stored, WALK_ONLY).search([QUESTION], k=6, expr=None)  # no cache: reads it
    assert len(reads) == 2 and handed[-1] == (None, want) and plain == [[(d, s) for d, s in ranking]]


@pytest.mark.parametrize("mark_fails", [False, True])
def test_a_graph_build_that_stops_on_an_error_marks_the_store_and_raises_its_own_error(
    index, monkeypatch, mark_fails
):
    """A build stopping after some batches marks the store (their chunks' entities are written)
    and raises why it stopped, even when that mark fails too. The second batch's extraction (in
    the build's extraction thread, beside the first batch's writes) fails once the first batch's
    entity rows are written, so the order is fixed."""
    index.add([chunk(c) for c in PASSAGES])
    first_written = threading.Event()
    real_add = build.add_entities

    def add_then_tell(*args, **kwargs):
        try:
            return real_add(*args, **kwargs)
        finally:
            first_written.set()

    monkeypatch.setattr(build, "add_entities", add_then_tell)
    broke = threading.Event()
    calls = []

    def extractor(texts):
        calls.append(texts)
        if len(calls) == 2:
            assert first_written.wait(30)
            broke.set()
            raise RuntimeError("extractor broke")
        return vocab_extractor(texts)

    marks = []
    real = type(index).mark_changed

    def mark(self):
        marks.append("after the error" if broke.is_set() else "before")
        if mark_fails and broke.is_set():
            raise OSError("store gone")
        return real(self)

    monkeypatch.setattr(type(index), "mark_changed", mark)
    with pytest.raises(RuntimeError, match="extractor broke"):
        build_graph(index, extractor, batch=2, progress=False)
    # the entity collection's creation and the first batch's entity rows marked it; the build
    # marked it once more when it stopped
    assert marks == ["before", "before", "after the error"]
    annotated = index.stored.count(f"exists {ENTITIES_FIELD}")
    assert annotated == 2  # the first batch's chunks carry their entities; none after it


def test_the_next_batch_is_extracted_while_the_batch_before_embeds_its_names(index, monkeypatch):
    """spaCy and the names' embedding each keep a core: the first batch's names wait (up to 10 s)
    for the second batch's extraction to start, which a build doing one after the other never does."""
    index.add([chunk(c) for c in PASSAGES])
    second_started = threading.Event()
    calls = []

    def extractor(texts):
        calls.append(threading.current_thread().name)
        if len(calls) == 2:
            second_started.set()
        return vocab_extractor(texts)

    real = build.embed_on_one_thread
    overlapped = []

    def embed(embeddings, texts):
        if not overlapped:  # the first batch's new names
            overlapped.append(second_started.wait(10))
        return real(embeddings, texts)

    monkeypatch.setattr(build, "embed_on_one_thread", embed)
    report = build_graph(index, extractor, batch=2, progress=False)
    assert overlapped == [True] and report.annotated == len(PASSAGES)
    assert all(name.startswith("graph-extract") for name in calls)
    assert index.stored.count(f"exists {ENTITIES_FIELD}") == len(PASSAGES)
