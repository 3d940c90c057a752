"""Graph search's in-process copy of the entity rows (``entity_graph.entity_copy``): a read from it
is the store's read, it follows every write (a new store state reads it again), no filtered search
reads it, and a graph search with it ranks as one without it while asking Milvus for no entity row."""

from __future__ import annotations

import gc

import pytest

from rag_graphs.config.graph_search import GraphSearchOptions
from rag_graphs.entity_graph import entity_copy as copies
from rag_graphs.entity_graph import graph_search as searching
from rag_graphs.entity_graph.build import add_entities
from rag_graphs.entity_graph.entity_copy import entity_copy
from rag_graphs.entity_graph.graph_search import graph_search
from rag_graphs.entity_graph.linking import ENTITY_FIELDS
from rag_graphs.entity_graph.rows import (
    CHUNKS_FIELD,
    COUNT_FIELD,
    NAME_FIELD,
    GraphRows,
    entity_table,
    graph_state,
)
from rag_graphs.store.collection import Collection
from rag_graphs.store.fields import PRIMARY_FIELD
from tests.graph_seams import use_extractor
from tests.unit.test_graph import PASSAGES, QUESTION, chunk, ingest, vocab_extractor

KEYS = ["velm", "no such entity", "korvik", "ilsa brandt", "osric vale", "lunmar", "tarn guild"]
FIELD_SETS = [ENTITY_FIELDS, [CHUNKS_FIELD, COUNT_FIELD], [NAME_FIELD], [PRIMARY_FIELD, COUNT_FIELD]]


@pytest.fixture
def stored(index, monkeypatch):
    ingest(index, [chunk(c, tenant="a" if c.startswith("p") else "b") for c in PASSAGES])
    use_extractor(monkeypatch, vocab_extractor)
    return index


def with_copy(index) -> GraphRows:
    rows = GraphRows(index)
    rows.entity_copy = entity_copy(index, graph_state(index))
    assert rows.entity_copy is not None
    return rows


def entity_gets(monkeypatch) -> list[list[str]]:
    """The keys of every read of the entity collection by key (``Collection.get``)."""
    asked: list[list[str]] = []
    real = Collection.get

    def get(self, keys, fields, *, where=None):
        if self.name.endswith("_entities"):
            asked.append(list(keys))
        return real(self, keys, fields, where=where)

    monkeypatch.setattr(Collection, "get", get)
    return asked


def test_a_read_from_the_copy_is_the_stores_read(stored):
    rows = with_copy(stored)
    stored_keys = {row[PRIMARY_FIELD] for row in entity_table(stored).scan([PRIMARY_FIELD])}
    assert set(rows.entity_copy or {}) == stored_keys and "korvik" in stored_keys
    for fields in FIELD_SETS:
        ours, theirs = rows.entities(KEYS, fields), GraphRows(stored).entities(KEYS, fields)
        assert ours == theirs and list(ours) == list(theirs)
    assert "no such entity" not in rows.entities(KEYS, ENTITY_FIELDS)
    ours = rows.entities(["korvik"], ENTITY_FIELDS)
    ours["korvik"][CHUNKS_FIELD].append("edited by a caller")
    assert rows.entities(["korvik"], ENTITY_FIELDS) == GraphRows(stored).entities(["korvik"], ENTITY_FIELDS)


def test_the_copy_is_read_once_per_state_and_follows_every_write(stored):
    before = graph_state(stored)
    first = entity_copy(stored, before)
    assert first is not None and entity_copy(stored, before) is first
    extra = chunk("d3")
    extra.metadata.update(chunk_id="d3", entities=["lunmar"])
    add_entities(stored, [extra])  # a graph build or an ingest adds d3 to Lunmar's row
    written = graph_state(stored)
    assert written != before
    rows = with_copy(stored)
    assert rows.entity_copy is not first
    assert rows.entities(["lunmar"], [CHUNKS_FIELD])["lunmar"][CHUNKS_FIELD] == ["d1", "d2", "d3"]
    assert rows.entities(KEYS, ENTITY_FIELDS) == GraphRows(stored).entities(KEYS, ENTITY_FIELDS)

    assert stored.delete_source("corpus/Korvik") == 1  # p2 and its links go
    deleted = with_copy(stored)
    assert deleted.entity_copy is not rows.entity_copy
    assert deleted.entities(KEYS, ENTITY_FIELDS) == GraphRows(stored).entities(KEYS, ENTITY_FIELDS)


def test_a_graph_search_with_the_copy_ranks_as_without_and_reads_no_entity_row(stored, monkeypatch):
    options = GraphSearchOptions()
    entity_copy(stored, graph_state(stored))  # read once, as the first search of a state does
    asked = entity_gets(monkeypatch)
    ours = graph_search(stored, QUESTION, k=6, options=options)
    assert asked == []
    theirs = graph_search(stored, QUESTION, k=6, options=GraphSearchOptions(in_process=False))
    assert asked  # without the copies the entity rows are read by key
    assert [(d.id, s) for d, s in ours.hits] == [(d.id, s) for d, s in theirs.hits]
    assert (ours.seeds, ours.chunks, ours.entities) == (theirs.seeds, theirs.chunks, theirs.entities)


def test_a_filtered_graph_search_never_reads_the_copy(stored, monkeypatch):
    given: list[bool] = []
    real = searching.fetch_neighbourhood

    def spy(index, seeds, first_hits, *, expr, size, rows=None):  # type: ignore[no-untyped-def]
        given.append(rows is not None and rows.entity_copy is not None)
        return real(index, seeds, first_hits, expr=expr, size=size, rows=rows)

    monkeypatch.setattr(searching, "fetch_neighbourhood", spy)
    found = graph_search(stored, QUESTION, k=6, expr='tenant == "a"', options=GraphSearchOptions())
    assert {d.id for d, _ in found.hits} == {"p1", "p2"}
    graph_search(stored, QUESTION, k=6, options=GraphSearchOptions())
    graph_search(stored, QUESTION, k=6, options=GraphSearchOptions(in_process=False))
    assert given == [False, True, False]


def test_an_entity_collection_over_the_bound_is_read_by_key(stored, monkeypatch):
    monkeypatch.setattr(copies, "MAX_COPIED_ENTITIES", 2)
    assert entity_copy(stored, ("over the bound", graph_state(stored))) is None


def test_no_entity_collection_no_copy(index):
    index.add([chunk(c) for c in PASSAGES])
    assert entity_copy(index, index.fingerprint()) is None


def test_each_new_state_moves_what_the_process_holds_out_of_the_collectors_way(stored, monkeypatch):
    """A new state's copy of at least ``SETTLE_AT`` rows is followed by one full collection and a
    freeze (``_settle``), a search of a state already read settles nothing again, and a smaller
    copy settles nothing (a collection then costs more than the pause it would spare)."""
    settled: list[int] = []
    real = copies._settle

    def spy() -> None:
        real()
        settled.append(gc.get_freeze_count())

    monkeypatch.setattr(copies, "_settle", spy)
    held = len(entity_copy(stored, ("the size of this copy", graph_state(stored))) or {})
    assert held > 1 and settled == []  # the test's copy is far below the shipped SETTLE_AT
    monkeypatch.setattr(copies, "SETTLE_AT", held + 1)
    entity_copy(stored, ("one row short of settling", graph_state(stored)))
    assert settled == []
    monkeypatch.setattr(copies, "SETTLE_AT", held)
    try:
        state = ("a state not read yet", graph_state(stored))
        entity_copy(stored, state)
        entity_copy(stored, state)
        assert len(settled) == 1 and settled[0] > 0
        entity_copy(stored, ("the next state", graph_state(stored)))
        assert len(settled) == 2
    finally:
        gc.unfreeze()
