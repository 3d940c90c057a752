"""The nearest entity names searched in process (``entity_graph.name_search``): on a scripted
collection it gives what Milvus gives, it reads the vectors from the collection's files (and by key
what they lack), follows every write (a new state, read again), is never used by a filtered search,
and until its background read has ended linking asks Milvus."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from rag_graphs.config.graph_search import GraphSearchOptions
from rag_graphs.entity_graph import graph_search as searching
from rag_graphs.entity_graph import name_search
from rag_graphs.entity_graph.build import add_entities
from rag_graphs.entity_graph.entity_copy import entity_copy
from rag_graphs.entity_graph.graph_search import graph_search
from rag_graphs.entity_graph.linking import LINK_K, nearest_entities
from rag_graphs.entity_graph.name_search import NameVectors, name_vectors, read_name_vectors, wait_for_reads
from rag_graphs.entity_graph.rows import NAME_FIELD, GraphRows, entity_table, graph_state
from rag_graphs.store.collection import Collection
from rag_graphs.store.fields import DENSE_FIELD
from rag_graphs.store.lite_files import newest_versions
from tests.graph_seams import use_extractor
from tests.unit.test_graph import PASSAGES, QUESTION, VOCAB, chunk, ingest, vocab_extractor

MENTIONS = ["Ilsa Brandt", "Korvik harbour", "the Tarn", "Velm", "no such name at all"]


@pytest.fixture
def stored(index, monkeypatch):
    """The scripted graph (eight entities), every size searched in process."""
    ingest(index, [chunk(c) for c in PASSAGES])
    use_extractor(monkeypatch, vocab_extractor)
    monkeypatch.setattr(name_search, "MIN_SEARCHED_ENTITIES", 1)
    yield index
    wait_for_reads()
    name_search._HELD.clear()


def read_now(index) -> tuple[NameVectors, GraphRows]:
    """The state's name vectors read here (not in the background) and its reads by key."""
    state = graph_state(index)
    rows = GraphRows(index)
    rows.entity_copy = entity_copy(index, state)
    assert rows.entity_copy is not None
    names = read_name_vectors(index, state, rows.entity_copy)
    assert names is not None
    return names, rows


def entity_reads(monkeypatch) -> list[str]:
    """The names of every entity collection search (``Collection.search``) and vector read by key."""
    asked: list[str] = []
    search, get = Collection.search, Collection.get

    def spy_search(self, data, **kw):  # type: ignore[no-untyped-def]
        if self.name.endswith("_entities"):
            asked.append("search")
        return search(self, data, **kw)

    def spy_get(self, keys, fields, *, where=None):  # type: ignore[no-untyped-def]
        if self.name.endswith("_entities") and DENSE_FIELD in fields:
            asked.append("vectors by key")
        return get(self, keys, fields, where=where)

    monkeypatch.setattr(Collection, "search", spy_search)
    monkeypatch.setattr(Collection, "get", spy_get)
    return asked


def both_ways(index, names: NameVectors, rows: GraphRows, threshold: float) -> tuple[dict, dict]:
    vectors = index.embeddings.embed_documents(MENTIONS)
    limits = [LINK_K, 1, 5, LINK_K, 2]
    theirs = nearest_entities(index, vectors, limits, threshold)
    ours = nearest_entities(index, vectors, limits, threshold, names, rows)
    return ours, theirs


@pytest.mark.parametrize("threshold", [-1.0, 0.0, 0.2, 0.99])
def test_in_process_gives_milvus_top_k_and_rows(stored, threshold):
    names, rows = read_now(stored)
    ours, theirs = both_ways(stored, names, rows, threshold)
    assert list(ours) == list(theirs)
    for key, row in theirs.items():
        assert ours[key]["similarity"] == pytest.approx(row["similarity"], abs=1e-5)
        assert {f: v for f, v in ours[key].items() if f != "similarity"} == {
            f: v for f, v in row.items() if f != "similarity"
        }
    if threshold < 0:  # every mention found its names; the exact one first
        assert len(theirs) >= 5 and theirs["ilsa brandt"]["similarity"] == pytest.approx(1.0)


def test_flushed_names_are_read_from_the_files_the_rest_by_key(stored, monkeypatch):
    entity_table(stored).flush()  # every entity row in the collection's files
    asked = entity_reads(monkeypatch)
    names, _ = read_now(stored)
    assert asked == [] and sorted(names.keys) == sorted(name.casefold() for name in VOCAB)
    stored_vectors = entity_table(stored).get(list(names.keys), [DENSE_FIELD])
    for key, unit in zip(names.keys, names.units, strict=True):
        vector = np.asarray(stored_vectors[key][DENSE_FIELD], dtype=np.float32)
        np.testing.assert_allclose(unit, vector / np.linalg.norm(vector), atol=1e-6)
    asked.clear()
    extra = chunk("d3")
    extra.metadata.update(chunk_id="d3", entities=["brisk fen"])
    add_entities(stored, [extra], {"brisk fen": "Brisk Fen"})  # not flushed: in Milvus Lite's memory
    fresh, rows = read_now(stored)
    assert asked == ["vectors by key"] and "brisk fen" in fresh.keys
    ours, theirs = both_ways(stored, fresh, rows, -1.0)
    assert list(ours) == list(theirs)


def test_a_new_state_is_read_again_new_key_found_deleted_key_gone(stored):
    before = graph_state(stored)
    names, _ = read_now(stored)
    assert "korvik" in names.keys and "brisk fen" not in names.keys
    extra = chunk("d3")
    extra.metadata.update(chunk_id="d3", entities=["brisk fen"])
    add_entities(stored, [extra], {"brisk fen": "Brisk Fen"})
    stored.flush()
    entity_table(stored).flush()
    assert graph_state(stored) != before
    added, rows = read_now(stored)
    assert "brisk fen" in added.keys
    vector = stored.embeddings.embed_documents(["Brisk Fen"])
    assert [key for key, _ in added.nearest(vector, [1], 0.5)[0]] == ["brisk fen"]
    entity_table(stored).delete(["korvik"])  # as ``prune_entities`` removes an orphan
    stored.mark_changed()
    gone, rows = read_now(stored)
    assert "korvik" not in gone.keys and len(gone.keys) == len(added.keys) - 1
    ours, theirs = both_ways(stored, gone, rows, -1.0)
    assert list(ours) == list(theirs) and "korvik" not in ours
    entity_table(stored).flush()  # the delete in a delta file now, korvik's row still in a data file
    stored.mark_changed()
    flushed, _ = read_now(stored)
    assert flushed.keys == gone.keys
    versions = newest_versions(stored.uri, entity_table(stored).name, NAME_FIELD)
    assert versions is not None and "korvik" not in versions.live and "lunmar" in versions.live


def test_the_read_runs_in_the_background_and_milvus_searches_until_it_ends(stored, monkeypatch):
    release = threading.Event()
    real = name_search.read_name_vectors
    started: list[int] = []

    def slow(index, state, copy):  # type: ignore[no-untyped-def]
        started.append(1)
        assert release.wait(30)
        return real(index, state, copy)

    monkeypatch.setattr(name_search, "read_name_vectors", slow)
    given: list[NameVectors | None] = []
    link = searching.link_question

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        given.append(kwargs.get("names"))
        return link(*args, **kwargs)

    monkeypatch.setattr(searching, "link_question", spy)
    options = GraphSearchOptions()
    first = graph_search(stored, QUESTION, k=6, options=options)
    second = graph_search(stored, QUESTION, k=6, options=options)
    assert given == [None, None] and started == [1]  # one read, searches meanwhile ask Milvus
    release.set()
    wait_for_reads()
    third = graph_search(stored, QUESTION, k=6, options=options)
    assert isinstance(given[-1], NameVectors) and started == [1]
    assert [(d.id, s) for d, s in third.hits] == [(d.id, s) for d, s in first.hits]
    assert [(d.id, s) for d, s in second.hits] == [(d.id, s) for d, s in first.hits]
    state = graph_state(stored)
    copy = entity_copy(stored, state)
    assert name_vectors(stored, state, copy) is given[-1]
    release.clear()  # the next state's read waits again
    assert name_vectors(stored, ("the next state", state), copy) is None
    assert (stored.uri, stored.collection) not in name_search._HELD  # the last state's freed
    assert name_vectors(stored, state, copy) is None  # and not searched again meanwhile
    release.set()


def test_a_filtered_search_never_uses_it_nor_does_a_small_collection(stored, monkeypatch):
    state = graph_state(stored)
    rows = GraphRows(stored)
    rows.entity_copy = entity_copy(stored, state)
    assert name_vectors(stored, state, rows.entity_copy) is None  # its read starts
    wait_for_reads()
    assert name_vectors(stored, state, rows.entity_copy) is not None
    given: list[object] = []
    link = searching.link_question

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        given.append(kwargs.get("names"))
        return link(*args, **kwargs)

    monkeypatch.setattr(searching, "link_question", spy)
    graph_search(stored, QUESTION, k=6, expr='kind == "text"', options=GraphSearchOptions())
    graph_search(stored, QUESTION, k=6, options=GraphSearchOptions(in_process=False))
    graph_search(stored, QUESTION, k=6, options=GraphSearchOptions())
    assert given[:2] == [None, None] and isinstance(given[2], NameVectors)
    monkeypatch.setattr(name_search, "MIN_SEARCHED_ENTITIES", len(VOCAB) + 1)
    assert name_vectors(stored, state, rows.entity_copy) is None
    assert name_search._READING == {}  # and no read started


def test_the_bf16_pool_gives_the_float32_answer():
    """The bf16 product's pool, rescored in float32, gives the float32 search's answer, including
    where the pool cannot prove it (crowded near-ties: every name then scored in float32)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    units = rng.standard_normal((3000, 24)).astype(np.float32)
    units[:400] = units[0] + 0.01 * units[:400]  # a crowd of near-duplicates
    units /= np.linalg.norm(units, axis=1, keepdims=True)
    keys = tuple(f"k{i}" for i in range(len(units)))
    exact = NameVectors("s", keys, units)
    pooled = NameVectors("s", keys, units, torch.from_numpy(units).to(torch.bfloat16))
    queries = [*rng.standard_normal((20, 24)).tolist(), units[0].tolist(), units[1500].tolist()]
    for threshold in (-1.0, 0.3, 0.9):
        limits = [3] * len(queries)
        assert pooled.nearest(queries, limits, threshold) == exact.nearest(queries, limits, threshold)
    assert [key for key, _ in exact.nearest([units[1500]], [1], 0.0)[0]] == ["k1500"]


def test_a_read_that_fails_leaves_the_state_to_milvus(stored, monkeypatch):
    calls: list[int] = []

    def failing(index, state, copy):  # type: ignore[no-untyped-def]
        calls.append(1)
        raise FileNotFoundError("a data file compacted away")

    monkeypatch.setattr(name_search, "read_name_vectors", failing)
    state = graph_state(stored)
    copy = entity_copy(stored, state)
    assert name_vectors(stored, state, copy) is None
    wait_for_reads()
    assert name_vectors(stored, state, copy) is None and calls == [1, 1]  # tried twice, not again
