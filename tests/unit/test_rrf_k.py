"""``rrf_k`` reaches Milvus: hybrid scores are ``sum 1 / (rrf_k + rank)`` with the caller's constant.

On a real Milvus Lite store with fake embeddings: the exact text of a chunk is
ranked first by both halves of the hybrid search (its own vector; the most
shared words), so it scores ``2 / (k + 1)``; a chunk sharing no word with the
query is ranked by the dense half alone, so it scores ``1 / (k + its dense rank)``.
"""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from rag_graphs.search.retrieval import search, search_many
from rag_graphs.store import ChunkIndex

QUERY = "Springfield is the capital of Illinois."
CHUNKS = [
    ("c1", "Adrian Holovaty was born in Chicago."),  # no word in common with QUERY
    ("c2", QUERY),
    ("c3", "Django is a web framework created by Adrian Holovaty."),
]


@pytest.fixture
def stored(index: ChunkIndex) -> ChunkIndex:
    index.add(
        [
            Document(page_content=text, metadata={"chunk_id": cid, "source": "/a.md", "doc_hash": "h"})
            for cid, text in CHUNKS
        ]
    )
    index.flush()
    return index


@pytest.mark.parametrize("rrf_k", [60, 10, 1])
def test_hybrid_scores_follow_the_rrf_constant_given(stored: ChunkIndex, rrf_k: int):
    dense_rank = {doc.id: rank for rank, (doc, _) in enumerate(stored.search(QUERY, k=3, mode="dense"), 1)}
    scores = {doc.id: score for doc, score in stored.search(QUERY, k=3, mode="hybrid", rrf_k=rrf_k)}
    assert scores["c2"] == pytest.approx(2 / (rrf_k + 1))
    assert scores["c1"] == pytest.approx(1 / (rrf_k + dense_rank["c1"]))
    batch = stored.search_many([QUERY, "Chicago"], k=3, rrf_k=rrf_k)
    assert {doc.id: score for doc, score in batch[0]} == pytest.approx(scores)


def test_the_default_constant_is_60_and_another_one_changes_the_scores(stored: ChunkIndex):
    default = {d.id: s for d, s in stored.search(QUERY, k=3)}
    assert default["c2"] == pytest.approx(2 / 61)
    assert stored.search(QUERY, k=3, rrf_k=5)[0][1] == pytest.approx(2 / 6) != default["c2"]


@pytest.mark.parametrize("rrf_k", [60, 7])
def test_the_context_rrf_k_reaches_the_store(stored: ChunkIndex, make_context, rrf_k: int):
    ctx = make_context(rrf_k=rrf_k, k=3, search_mode="hybrid")
    (top, *_) = search(ctx, QUERY)
    assert top.id == "c2" and top.metadata["score"] == pytest.approx(2 / (rrf_k + 1))
    ((batch_top, *_),) = search_many(ctx, [QUERY])
    assert batch_top.id == "c2" and batch_top.metadata["score"] == pytest.approx(2 / (rrf_k + 1))
