"""Graph search's in-process dense search (``store.mirror``): the copy of a store state's chunks
answers as Milvus's dense search does, follows every write, and no filtered search reads it."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from rag_graphs.config.graph_search import GraphSearchOptions
from rag_graphs.entity_graph import first_search
from rag_graphs.entity_graph.first_search import search_first_hits
from rag_graphs.entity_graph.graph_search import graph_search
from rag_graphs.entity_graph.rows import graph_state
from rag_graphs.store import mirror
from rag_graphs.store.mirror import chunk_mirror
from tests.unit.test_graph import PASSAGES, QUESTION, chunk, ingest

QUERIES = ["harbour town mayor", "Who was the mayor of the harbour town?", "granite", QUESTION]


def same_hits(ours: list[tuple[Document, float]], theirs: list[tuple[Document, float]]) -> None:
    assert [(d.id, d.page_content, d.metadata) for d, _ in ours] == [
        (d.id, d.page_content, d.metadata) for d, _ in theirs
    ]
    assert [s for _, s in ours] == pytest.approx([s for _, s in theirs], abs=1e-6)


@pytest.mark.parametrize("flushed", [False, True])
def test_the_copy_ranks_as_milvus_dense_search_does(index, flushed):
    index.add([chunk(c) for c in PASSAGES])
    if flushed:
        index.flush()
    copy = chunk_mirror(index, index.fingerprint())
    assert copy is not None and len(copy.rows) == len(PASSAGES)
    for query in QUERIES:
        vector = index.embeddings.embed_query(query)
        for k in (1, 3, len(PASSAGES), len(PASSAGES) + 2):
            same_hits(copy.search(vector, k), index.search(query, k=k, mode="dense"))


def test_ties_come_in_stored_order_as_milvus_gives_them(index):
    """Two chunks of one text have one vector: the earlier stored comes first, in both."""
    twin = Document(page_content="Velm exports granite and wool.", metadata={"chunk_id": "t1", "source": "a"})
    other = Document(
        page_content="Velm exports granite and wool.", metadata={"chunk_id": "t0", "source": "b"}
    )
    index.add([twin, other, chunk("p1")])
    copy = chunk_mirror(index, index.fingerprint())
    assert copy is not None
    vector = index.embeddings.embed_query("Velm exports granite and wool.")
    ours, theirs = copy.search(vector, 3), index.search("Velm exports granite and wool.", k=3, mode="dense")
    assert [d.id for d, _ in ours][:2] == ["t1", "t0"] == [d.id for d, _ in theirs][:2]
    same_hits(ours, theirs)


@pytest.mark.parametrize("hybrid", [False, True])
def test_the_first_searches_with_the_copy_are_the_first_searches_without(index, hybrid):
    index.add([chunk(c) for c in PASSAGES])
    copy = chunk_mirror(index, index.fingerprint())
    for query in QUERIES:
        vector = index.embeddings.embed_query(query)
        ours = search_first_hits(index, query, vector, k=4, expr=None, hybrid=hybrid, mirror=copy)
        theirs = search_first_hits(index, query, vector, k=4, expr=None, hybrid=hybrid)
        same_hits(ours.dense, theirs.dense)
        same_hits(ours.ranking, theirs.ranking)


def test_a_write_changes_the_state_and_the_copy_follows_it(index):
    ingest(index, [chunk(c) for c in PASSAGES])
    before = graph_state(index)
    first = chunk_mirror(index, before)
    assert first is not None and chunk_mirror(index, before) is first  # read once per state
    text = chunk("p2").page_content
    vector = index.embeddings.embed_query(text)
    assert first.search(vector, 1)[0][0].id == "p2"

    index.delete_ids(["p2"])
    deleted = graph_state(index)
    assert deleted != before
    after_delete = chunk_mirror(index, deleted)
    assert after_delete is not None and after_delete is not first
    assert "p2" not in {d.id for d, _ in after_delete.search(vector, len(PASSAGES))}
    same_hits(after_delete.search(vector, 3), index.search(text, k=3, mode="dense"))

    extra = Document(page_content="Osric Vale keeps the harbour.", metadata={"chunk_id": "n1", "source": "c"})
    index.add([extra])
    inserted = chunk_mirror(index, graph_state(index))
    assert inserted is not None
    assert inserted.search(index.embeddings.embed_query(extra.page_content), 1)[0][0].id == "n1"


def test_a_hit_is_the_callers_own(index):
    """Editing a hit's metadata (its lists too) leaves the copy as stored."""
    ingest(index, [chunk(c) for c in PASSAGES])
    copy = chunk_mirror(index, graph_state(index))
    assert copy is not None
    vector = index.embeddings.embed_query("Korvik")
    doc, _ = copy.search(vector, 1)[0]
    doc.metadata["entities"].append("edited")
    doc.metadata["title"] = "edited"
    again, _ = copy.search(vector, 1)[0]
    assert "edited" not in again.metadata["entities"] and again.metadata["title"] != "edited"


def test_a_collection_over_the_bound_is_searched_in_milvus(index, monkeypatch):
    index.add([chunk(c) for c in PASSAGES])
    monkeypatch.setattr(mirror, "MAX_MIRRORED_ROWS", len(PASSAGES) - 1)
    assert chunk_mirror(index, index.fingerprint()) is None


def test_a_filtered_search_never_reads_the_copy(index, monkeypatch):
    """Graph search hands the copy to its first searches only without a filter; a filtered one
    searches Milvus and sees only what the filter admits; the first searches refuse a copy with a
    filter."""
    ingest(index, [chunk(c, tenant="a" if c.startswith("p") else "b") for c in PASSAGES])
    given: list[bool] = []
    real = first_search.search_first_hits

    def spy(*args, **kwargs):
        given.append(kwargs["mirror"] is not None)
        return real(*args, **kwargs)

    monkeypatch.setattr(first_search, "search_first_hits", spy)
    options = GraphSearchOptions()
    tenant_b = 'tenant == "b"'
    found = graph_search(index, QUESTION, k=6, expr=tenant_b, options=options)
    assert {d.id for d, _ in found.hits} <= {"d1", "d2", "d3", "d4"}
    graph_search(index, QUESTION, k=6, options=options)
    graph_search(index, QUESTION, k=6, options=GraphSearchOptions(in_process=False))
    assert given == [False, True, False]

    copy = chunk_mirror(index, graph_state(index))
    vector = index.embeddings.embed_query(QUESTION)
    with pytest.raises(ValueError, match="filtered"):
        real(index, QUESTION, vector, k=3, expr=tenant_b, hybrid=True, mirror=copy)


def test_graph_search_with_the_copy_ranks_as_without_it(index):
    """On a store small enough that Milvus Lite's search is exact, graph search's ranking does not
    change with the copy."""
    ingest(index, [chunk(c) for c in PASSAGES])
    for query in QUERIES:
        ours = graph_search(index, query, k=4, options=GraphSearchOptions())
        theirs = graph_search(index, query, k=4, options=GraphSearchOptions(in_process=False))
        assert [d.id for d, _ in ours.hits] == [d.id for d, _ in theirs.hits]
        assert [s for _, s in ours.hits] == pytest.approx([s for _, s in theirs.hits], abs=1e-6)
