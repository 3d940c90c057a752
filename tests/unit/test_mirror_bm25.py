"""Graph search's in-process BM25 and chunk reads (``store.bm25``, ``store.mirror``; issue 47
round 5): BM25 scores as the formula says and, on a store of one segment and no superseded rows,
as Milvus Lite's BM25 does; the copy follows every write; the learned ranker's pool read and the
final fetch from the copy are the store's; no filtered search reads the copy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from langchain_core.documents import Document

from rag_graphs.config.graph_search import GraphSearchOptions
from rag_graphs.entity_graph import candidates
from rag_graphs.entity_graph import graph_search as search_module
from rag_graphs.entity_graph.candidates import read_pool
from rag_graphs.entity_graph.graph_search import graph_search
from rag_graphs.entity_graph.rank import documents_of
from rag_graphs.entity_graph.rows import graph_state
from rag_graphs.store.bm25 import Bm25Matrix, term_id, tokens
from rag_graphs.store.fields import SPARSE_FIELD
from rag_graphs.store.index import ChunkIndex
from rag_graphs.store.keywords import keyword_query
from rag_graphs.store.mirror import chunk_mirror
from tests.unit.test_graph import PASSAGES, QUESTION, chunk, ingest

CORPUS = ["the cat sat on the mat", "the dog sat", "cat cat cat", "", "Dogs and CATS"]


def hand_bm25(query: str, texts: list[str], k1: float = 1.5, b: float = 0.75) -> list[float]:
    """BM25 written out term by term (Milvus Lite's formula, its defaults)."""
    docs = [t.lower().split() for t in texts]
    n, avgdl = len(docs), sum(len(d) for d in docs) / len(docs)
    out = []
    for doc in docs:
        score = 0.0
        for term in set(query.lower().split()):
            df = sum(term in d for d in docs)
            tf = doc.count(term)
            if tf:
                idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
                score += (
                    query.lower().split().count(term)
                    * idf
                    * tf
                    * (k1 + 1)
                    / (tf + k1 * (1 - b + b * len(doc) / avgdl))
                )
        out.append(score)
    return out


@pytest.mark.parametrize("query", ["cat", "sat mat", "cat cat dog", "dogs", "bird", ""])
def test_bm25_scores_as_the_formula(query):
    matrix = Bm25Matrix.build(CORPUS)
    assert matrix.scores(query) == pytest.approx(hand_bm25(query, CORPUS), abs=1e-12)
    expected = sorted(
        (i for i, s in enumerate(hand_bm25(query, CORPUS)) if s > 0),
        key=lambda i: (-hand_bm25(query, CORPUS)[i], i),
    )
    assert [i for i, _ in matrix.top(query, 10)] == expected
    assert [i for i, _ in matrix.top(query, 1)] == expected[:1]


def test_the_analyzer_is_the_stores():
    assert tokens("Ilsa Brandt's Korvik, 1920!") == ["ilsa", "brandt", "s", "korvik", "1920"]
    assert term_id("korvik") == term_id("korvik") and term_id("korvik") != term_id("velm")
    assert term_id("") == 0x811C9DC5  # FNV-1a's offset basis


def test_the_copys_bm25_ranks_as_milvus_on_one_segment(index):
    """One flushed segment, no superseded row: N, df and avgdl are the same either way."""
    index.add([chunk(c) for c in PASSAGES])
    index.flush()
    copy = chunk_mirror(index, index.fingerprint())
    assert copy is not None and copy.keywords is not None
    for query in ["Korvik harbour mayor", "Velm granite", "born in Korvik", QUESTION, "unseen words"]:
        asked = keyword_query(query)
        theirs = index._scored(index._search_field(SPARSE_FIELD, [asked], 10, None)[0])
        ours = copy.keyword_search(asked, 10)
        assert ours is not None
        assert [d.id for d, _ in ours] == [d.id for d, _ in theirs]
        # Milvus Lite hands BM25 hits back with the score negated (a distance); only order is used
        assert [s for _, s in ours] == pytest.approx([abs(s) for _, s in theirs], rel=1e-5)


def test_a_delete_and_an_insert_change_the_state_and_the_bm25_copy_follows(index):
    ingest(index, [chunk(c) for c in PASSAGES])
    before = graph_state(index)
    first = chunk_mirror(index, before)
    assert first is not None
    assert [d.id for d, _ in first.keyword_search("granite", 5) or []] == ["d3"]

    index.delete_ids(["d3"])
    deleted = graph_state(index)
    assert deleted != before
    after_delete = chunk_mirror(index, deleted)
    assert after_delete is not None and after_delete is not first
    assert after_delete.keyword_search("granite", 5) == []
    assert after_delete.keywords is not None and after_delete.keywords.chunks == len(PASSAGES) - 1

    extra = Document(
        page_content="Granite quarries of Osric Vale.", metadata={"chunk_id": "n1", "source": "c"}
    )
    index.add([extra])
    inserted = chunk_mirror(index, graph_state(index))
    assert inserted is not None
    assert [d.id for d, _ in inserted.keyword_search("granite", 5) or []] == ["n1"]


def test_the_pool_read_and_the_fetch_from_the_copy_are_the_stores(index):
    """The learned ranker's features read the same cosines and texts; the fetch the same documents."""
    ingest(index, [chunk(c) for c in PASSAGES])
    copy = chunk_mirror(index, graph_state(index))
    assert copy is not None
    pool = ["p2", "d1", "gone", "p1"]
    vector = index.embeddings.embed_query(QUESTION)
    assert read_pool(index, pool, vector, None, copy) == read_pool(index, pool, vector, None)
    ranked = [("p2", 0.9), ("gone", 0.5), ("d4", 0.4)]
    ours, theirs = documents_of(index, ranked, {}, copy), documents_of(index, ranked, {})
    assert [(d.id, d.page_content, d.metadata, s) for d, s in ours] == [
        (d.id, d.page_content, d.metadata, s) for d, s in theirs
    ]
    assert [d.id for d, _ in ours] == ["p2", "d4"]
    with pytest.raises(ValueError, match="filtered"):
        read_pool(index, pool, vector, 'tenant == "b"', copy)


def test_a_filtered_graph_search_reads_nothing_from_the_copy(index, monkeypatch):
    """With a filter, graph search's pool read and fetch go to the store; without, to the copy."""
    ingest(index, [chunk(c, tenant="a" if c.startswith("p") else "b") for c in PASSAGES])
    given: list[tuple[str, bool]] = []
    real_read, real_fetch = candidates.read_pool, search_module.documents_of

    def read_spy(index, pool, vector, expr, mirror=None):  # type: ignore[no-untyped-def]
        given.append(("read", mirror is not None))
        return real_read(index, pool, vector, expr, mirror)

    def fetch_spy(index, ranked, known, mirror=None):  # type: ignore[no-untyped-def]
        given.append(("fetch", mirror is not None))
        return real_fetch(index, ranked, known, mirror)

    import rag_graphs.entity_graph.learned_rank as learned_rank

    monkeypatch.setattr(learned_rank, "read_pool", read_spy)
    monkeypatch.setattr(search_module, "documents_of", fetch_spy)
    found = graph_search(index, QUESTION, k=6, expr='tenant == "a"', options=GraphSearchOptions())
    assert {d.id for d, _ in found.hits} == {"p1", "p2"}
    assert given and not any(used for _, used in given)
    given.clear()
    graph_search(index, QUESTION, k=6, options=GraphSearchOptions())
    assert given == [("read", True), ("fetch", True)]


def test_an_empty_corpus_scores_nothing():
    matrix = Bm25Matrix.build([])
    assert matrix.top("cat", 3) == [] and matrix.scores("cat").shape == (0,)
    assert np.all(Bm25Matrix.build(["", ""]).scores("cat") == 0)


def test_a_copy_of_a_hybrid_collection_holds_bm25_and_a_dense_one_does_not(index, fake_embeddings, tmp_path):
    """The copy of a hybrid collection answers BM25 itself; a dense-only collection's copy has no
    BM25 weights and says so (None: the caller asks the store, which has no BM25 either)."""
    index.add([chunk(c) for c in PASSAGES])
    copy = chunk_mirror(index, index.fingerprint())
    assert copy is not None and copy.keywords is not None
    assert copy.keyword_search("granite", 3)
    dense = ChunkIndex(
        uri=str(tmp_path / "dense.db"), collection="dense", embeddings=fake_embeddings, hybrid=False
    )
    dense.add([chunk(c) for c in PASSAGES])
    only = chunk_mirror(dense, dense.fingerprint())
    assert only is not None and only.keywords is None and only.keyword_search("granite", 3) is None


def test_the_neighbourhoods_chunk_reads_from_the_copy_are_the_stores(index):
    """Graph search's chunk reads by key (``rows.GraphRows.chunks``) answered from the copy give the
    rows the store gives, and a filtered read still asks the store."""
    from rag_graphs.entity_graph.rows import GraphRows

    ingest(index, [chunk(c, tenant="a" if c.startswith("p") else "b") for c in PASSAGES])
    copy = chunk_mirror(index, graph_state(index))
    fields = ["pk", "entities", "title", "headings"]
    ids = ["d2", "gone", "p1", "p2"]
    ours = GraphRows(index, mirror=copy).chunks(ids, fields, None)
    theirs = GraphRows(index).chunks(ids, fields, None)
    assert ours == theirs and list(ours) == ["d2", "p1", "p2"]
    ours["p1"]["entities"].append("edited")
    assert "edited" not in GraphRows(index, mirror=copy).chunks(["p1"], fields, None)["p1"]["entities"]
    filtered = GraphRows(index, mirror=copy).chunks(ids, fields, 'tenant == "a"')
    assert list(filtered) == ["p1", "p2"]
