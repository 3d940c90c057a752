"""BM25 is asked a question's content words: function words cost Milvus Lite a walk over
nearly every chunk and add next to nothing to the ranking (``ingestion.store.keywords``)."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from rag_graphs.entity_graph.first_search import search_first_hits
from rag_graphs.store.keywords import STOP_WORDS, keyword_query


def test_keyword_query_keeps_the_content_words_in_order():
    assert keyword_query("Who was the mayor of Korvik in 1921?") == "mayor Korvik 1921"
    assert keyword_query("WHERE is THE Velmora Institute") == "Velmora Institute"  # any case
    assert keyword_query("Who was she?") == "Who was she?"  # nothing else left: searched whole
    assert keyword_query("the mayor", frozenset()) == "the mayor"  # no stop words: unchanged
    assert {"not", "no"}.isdisjoint(STOP_WORDS)  # negations carry meaning


def _chunks() -> list[Document]:
    texts = {
        "a": "the the the the the",  # the only chunk with "the": a rare, high-IDF word here
        "b": "mayor korvik council",
        "c": "weather report rain",
    }
    return [
        Document(page_content=t, metadata={"chunk_id": cid, "source": f"{cid}.md"})
        for cid, t in texts.items()
    ]


def _scores(index, query: str) -> dict[str, float]:
    return {str(d.id): s for d, s in index.search(query, k=3, mode="hybrid")}


def test_hybrid_search_asks_bm25_without_function_words(index):
    index.add(_chunks())
    stripped = _scores(index, "the mayor")
    index.bm25_stop_words = frozenset()  # the whole question, as before
    whole = _scores(index, "the mayor")
    # dense ranks alike in both; BM25 on the whole question also ranks "the the ..." first
    assert stripped["b"] > whole["b"]
    assert stripped.get("a", 0.0) < whole["a"]


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_a_question_of_function_words_still_finds_chunks(index, mode):
    index.add(_chunks())
    assert len(index.search("Who was she?", k=3, mode=mode)) == 3


def test_graph_search_first_searches_ask_bm25_the_same(index):
    index.add(_chunks())
    query = "the mayor"
    ours = search_first_hits(index, query, index.embeddings.embed_query(query), k=3, expr=None, hybrid=True)
    theirs = index.search(query, k=3)
    assert [d.id for d, _ in ours.ranking] == [d.id for d, _ in theirs]
    assert [s for _, s in ours.ranking] == pytest.approx([s for _, s in theirs])  # Milvus fuses in float32
