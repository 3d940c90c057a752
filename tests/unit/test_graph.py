"""The chunk-entity graph in Milvus Lite and Personalized PageRank search over it."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from langchain_core.documents import Document

from rag_graphs.entity_graph.build import add_entities, build_graph, prune_entities
from rag_graphs.entity_graph.entities import annotate
from rag_graphs.entity_graph.first_search import search_first_hits
from rag_graphs.entity_graph.graph_search import graph_search
from rag_graphs.entity_graph.linking import longest_matches, ngram_keys
from rag_graphs.entity_graph.rows import (
    CHUNKS_FIELD,
    COUNT_FIELD,
    entity_collection,
    entity_rows,
    has_graph,
)
from rag_graphs.entity_graph.walk import personalized_pagerank
from rag_graphs.store import ChunkIndex
from rag_graphs.store.fields import ENTITIES_FIELD
from tests.graph_seams import WALK_ONLY, script_first_hits, use_extractor

VOCAB = ["Ilsa Brandt", "Korvik", "Osric Vale", "Arden Moss", "Lunmar", "Velm", "Tarn Guild", "Hessa"]


def vocab_extractor(texts: list[str]) -> list[list[str]]:
    """A deterministic stand-in for NER: the vocabulary names each text contains."""
    return [[name for name in VOCAB if name in text] for text in texts]


PASSAGES = {
    "p1": ("Ilsa Brandt", "Ilsa Brandt was a painter, born in Korvik."),
    "p2": ("Korvik", "Korvik is a harbour town; its mayor is Osric Vale."),  # the answer, two hops away
    "d1": ("Arden Moss", "Arden Moss was born in Lunmar."),
    "d2": ("Lunmar", "Lunmar is a mountain village ruled by the Tarn Guild."),
    "d3": ("Velm", "Velm exports granite and wool."),
    "d4": ("Hessa", "Hessa is a river in Velm."),
}
QUESTION = "Who is the mayor of the town where Ilsa Brandt was born?"


def chunk(cid: str, **labels) -> Document:
    title, text = PASSAGES[cid]
    return Document(
        page_content=f"{title}\n{text}",
        metadata={"chunk_id": cid, "source": f"corpus/{title}", "title": title, "kind": "text", **labels},
    )


def ingest(index: ChunkIndex, docs: list[Document]) -> None:
    """The ingest path: annotate, add the chunks, record their entities."""
    names = annotate(docs, vocab_extractor)
    index.add(docs)
    add_entities(index, docs, names)
    index.flush()


def hits_of(index: ChunkIndex, ids: list[str]) -> list[tuple[Document, float]]:
    """Dense hits as a retriever would return them (scores falling)."""
    return [(d, 1.0 - i / 10) for i, d in enumerate(index.get(ids))]


def test_entities_are_stored_on_chunk_rows_and_in_the_entity_collection(index):
    ingest(index, [chunk(c) for c in PASSAGES])
    stored = {d.id: d for d in index.get(list(PASSAGES))}
    assert stored["p1"].metadata[ENTITIES_FIELD] == ["ilsa brandt", "korvik"]
    assert has_graph(index)
    rows = entity_rows(index, ["korvik", "velm"], [CHUNKS_FIELD, COUNT_FIELD, "name"])
    assert sorted(rows["korvik"][CHUNKS_FIELD]) == ["p1", "p2"] and rows["korvik"][COUNT_FIELD] == 2
    assert rows["velm"]["name"] == "Velm"
    # the dynamic field filters like the project's tags
    found = index.client.query(
        index.collection, filter='json_contains_any(entities, ["osric vale"])', output_fields=["pk"]
    )
    assert [r["pk"] for r in found] == ["p2"]
    # ingesting again adds nothing twice
    ingest(index, [chunk(c) for c in PASSAGES])
    assert entity_rows(index, ["korvik"], [COUNT_FIELD])["korvik"][COUNT_FIELD] == 2


def test_ppr_ranks_the_two_hop_chain_above_distractors(index, monkeypatch):
    ingest(index, [chunk(c) for c in PASSAGES])
    use_extractor(monkeypatch, vocab_extractor)
    script_first_hits(monkeypatch, hits_of(index, ["p1", "d1", "d2", "d3"]))  # dense misses p2
    result = graph_search(index, QUESTION, k=3, options=WALK_ONLY)
    ranked = [d.id for d, _ in result.hits]
    assert ranked[:2] == ["p1", "p2"]  # p2: neither a seed's chunk nor a first hit (second hop)
    assert result.seeds and result.seeds[0][0] == "Ilsa Brandt"
    assert result.chunks >= 5 and result.entities >= 5
    assert "Ilsa Brandt" in result.describe()
    scores = [s for _, s in result.hits]
    assert scores == sorted(scores, reverse=True)


def test_search_without_a_graph_or_seeds_is_the_dense_ranking(index, monkeypatch):
    index.add([chunk(c) for c in PASSAGES])
    found = graph_search(index, QUESTION, k=2, options=WALK_ONLY).hits
    assert [d.id for d, _ in found] == [d.id for d, _ in index.search(QUESTION, k=2, mode="dense")]
    ingest(index, [chunk(c) for c in PASSAGES])
    use_extractor(monkeypatch, vocab_extractor)
    script_first_hits(monkeypatch, hits_of(index, ["d3", "p1"]))
    none = graph_search(index, "nothing known", k=2, options=WALK_ONLY)
    assert [d.id for d, _ in none.hits] == ["d3", "p1"] and none.seeds == []


def test_a_deleted_chunk_takes_its_links_with_it(index, monkeypatch):
    docs = [chunk(c) for c in PASSAGES]
    docs[1].metadata["source"] = "corpus/to-delete"
    ingest(index, docs)
    assert index.delete_source("corpus/to-delete") == 1
    use_extractor(monkeypatch, vocab_extractor)
    script_first_hits(monkeypatch, hits_of(index, ["p1", "d1"]))
    result = graph_search(index, QUESTION, k=5, options=WALK_ONLY)
    assert "p2" not in [d.id for d, _ in result.hits]
    assert "Osric Vale" not in [name for name, _ in result.seeds]
    # the stale list entry is harmless; pruning rewrites lists and drops orphan entities
    assert entity_rows(index, ["korvik"], [CHUNKS_FIELD])["korvik"][CHUNKS_FIELD] == ["p1", "p2"]
    assert prune_entities(index) == 1  # "osric vale" was only in p2
    assert entity_rows(index, ["korvik"], [CHUNKS_FIELD])["korvik"][CHUNKS_FIELD] == ["p1"]
    assert "osric vale" not in entity_rows(index, ["osric vale"], [])


def test_every_read_honours_the_filter(index, monkeypatch):
    docs = [chunk(c, tenant="a") for c in PASSAGES]
    for doc in docs:
        if doc.metadata["chunk_id"] in {"p2", "d2"}:
            doc.metadata["tenant"] = "b"
    ingest(index, docs)
    expr = 'tenant == "a"'
    use_extractor(monkeypatch, vocab_extractor)
    result = graph_search(index, QUESTION, k=6, expr=expr, options=WALK_ONLY)
    assert {d.metadata["tenant"] for d, _ in result.hits} == {"a"}
    assert result.chunks == 4  # the walk itself never saw tenant b's chunks
    protected = graph_search(index, QUESTION, k=6, expr=expr)  # dense and BM25 first searches
    assert {d.metadata["tenant"] for d, _ in protected.hits} == {"a"} and protected.chunks == 4
    own = graph_search(index, "Where is Osric Vale mayor?", k=6, expr=expr, options=WALK_ONLY)
    assert all(name != "Osric Vale" for name, _ in own.seeds)  # only in tenant b's chunk


def test_build_graph_annotates_an_existing_collection_and_resumes(index, monkeypatch):
    index.add([chunk(c) for c in PASSAGES])  # ingested before entities existed
    calls: list[int] = []

    def flaky(texts: list[str]) -> list[list[str]]:
        calls.append(len(texts))
        if len(calls) == 2:
            raise RuntimeError("interrupted")
        return vocab_extractor(texts)

    with pytest.raises(RuntimeError, match="interrupted"):
        build_graph(index, flaky, batch=2, progress=False)
    report = build_graph(index, flaky, batch=2, progress=False)
    assert report.skipped == 2 and report.annotated == 4 and report.chunks == 6
    # the first run extracted the batch after the failed one too (ahead of the writes, then dropped);
    # the second extracted only the 4 chunks not done
    assert calls == [2, 2, 2, 2, 2]
    assert {d.id: d.metadata[ENTITIES_FIELD] for d in index.get(["p2"])}["p2"] == ["korvik", "osric vale"]
    assert build_graph(index, flaky, progress=False).annotated == 0
    # the rows keep their text, vectors and labels: dense and BM25 search still find them
    assert index.search("harbour town mayor", k=1, mode="hybrid")[0][0].id == "p2"
    assert index.search(chunk("p2").page_content, k=1, mode="dense")[0][0].id == "p2"
    use_extractor(monkeypatch, vocab_extractor)
    script_first_hits(monkeypatch, hits_of(index, ["p1", "d1"]))
    assert "p2" in [d.id for d, _ in graph_search(index, QUESTION, k=2, options=WALK_ONLY).hits]


def test_build_graph_on_an_empty_collection_is_a_clear_error(index):
    with pytest.raises(ValueError, match="is empty"):
        build_graph(index, vocab_extractor, progress=False)


def test_whole_row_upsert_where_partial_updates_are_missing(index, monkeypatch):
    index.add([chunk("p1"), chunk("d3")])
    upsert = index.client.upsert

    def no_partial(collection, rows, partial_update=False, **kwargs):
        if partial_update:
            raise TypeError("upsert() got an unexpected keyword argument 'partial_update'")
        return upsert(collection, rows, **kwargs)

    monkeypatch.setattr(index.client, "upsert", no_partial)
    index.stored.upsert_fields([{"pk": "p1", ENTITIES_FIELD: ["korvik"]}])
    [row] = index.client.query(index.collection, filter='pk == "p1"', output_fields=["*"])
    assert row[ENTITIES_FIELD] == ["korvik"] and row["title"] == "Ilsa Brandt"
    assert index.search(chunk("p1").page_content, k=1, mode="hybrid")[0][0].id == "p1"


def test_entity_collection_sits_beside_the_chunks(index):
    ingest(index, [chunk("p1")])
    assert entity_collection(index.collection) == f"{index.collection}_entities"
    assert index.client.has_collection(f"{index.collection}_entities")


def test_personalized_pagerank_prefers_what_is_near_the_seed():
    # chunks c0..c2, entities e0..e2: c0-e0, c0-e1, c1-e1, c1-e2, c2-e2
    incidence = sp.csr_matrix(np.array([[1, 1, 0], [0, 1, 1], [0, 0, 1]], dtype=float))
    reset = np.zeros(6)
    reset[3] = 1.0  # seed e0
    rank = personalized_pagerank(incidence, reset, damping=0.5)
    assert rank.sum() == pytest.approx(1.0)
    assert rank[0] > rank[1] > rank[2]
    assert personalized_pagerank(incidence, np.zeros(6)).sum() == 0


@pytest.mark.parametrize("hybrid", [False, True])
def test_the_first_searches_rank_as_the_index_does(index, hybrid):
    index.add([chunk(c) for c in PASSAGES])
    query = "harbour town mayor"
    vector = index.embeddings.embed_query(query)
    first = search_first_hits(index, query, vector, k=4, expr=None, hybrid=hybrid)
    assert (first.hybrid is not None) is hybrid
    for ours, mode in ((first.dense, "dense"), (first.ranking, "hybrid" if hybrid else "dense")):
        theirs = index.search(query, k=4, mode=mode)
        assert [(d.id, d.page_content, d.metadata) for d, _ in ours] == [
            (d.id, d.page_content, d.metadata) for d, _ in theirs
        ]
        assert [s for _, s in ours] == pytest.approx([s for _, s in theirs])


@pytest.mark.parametrize("query", ["harbour town mayor", "Who was the mayor of the harbour town?", "granite"])
def test_one_dense_and_one_bm25_search_give_the_dense_and_the_hybrid_ranking(index, query):
    """Graph search's first searches (``search_legs``): the dense ranking and hybrid search's
    ranking, ids, order and scores, with the dense search run once."""
    index.add([chunk(c) for c in PASSAGES])
    dense, hybrid = index.search_legs(query, index.embeddings.embed_query(query), k=4)
    for ours, mode in ((dense, "dense"), (hybrid, "hybrid")):
        theirs = index.search(query, k=4, mode=mode)
        assert [d.id for d, _ in ours] == [d.id for d, _ in theirs]
        assert [s for _, s in ours] == pytest.approx([s for _, s in theirs])


def test_question_ngrams_find_names_ner_misses():
    spans = ngram_keys("Which film has the director born first, Reaching For The Sun or Trifling Women?")
    assert "reaching for the sun" in spans and "trifling women" in spans
    assert "born" not in spans and "which" not in spans and "director" not in spans
    found = {"reaching for the sun", "sun", "trifling women", "women"}
    assert longest_matches(spans, found) == ["reaching for the sun", "trifling women"]
    lower = ngram_keys("where was the mayor of korvik born")
    assert "mayor of korvik" in lower and "korvik" not in lower  # one word alone is too ambiguous
