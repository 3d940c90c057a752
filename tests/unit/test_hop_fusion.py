"""A run's rounds are fused into ``documents`` by weighted RRF: the first round's searches
weigh ``first_hop_weight`` once a later round exists, so model-written hop queries that agree
with each other cannot push out what the question's own search ranked high."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from rag_graphs.config.context import RagContext
from rag_graphs.nodes.retrieve import ranked
from rag_graphs.search.fusion import reciprocal_rank_fusion
from rag_graphs.state import merge_documents


def _docs(*ids: str) -> list[Document]:
    return [Document(id=i, page_content=f"text {i}") for i in ids]


def test_weighted_rrf_counts_a_ranking_weight_times():
    rankings = [_docs("a", "b"), _docs("c"), _docs("c")]
    assert [d.id for d in reciprocal_rank_fusion(rankings)] == ["c", "a", "b"]  # c: 2/61 > a: 1/61
    weighted = reciprocal_rank_fusion(rankings, weights=[3.0, 1.0, 1.0])
    assert [d.id for d in weighted] == ["a", "b", "c"]  # a: 3/61 > b: 3/62 > c: 2/61
    assert weighted[0].metadata["rrf_score"] == pytest.approx(3 / 61)
    with pytest.raises(ValueError, match="2 weights for 3 rankings"):
        reciprocal_rank_fusion(rankings, weights=[1.0, 2.0])


def _state_and_new(second_round: int):
    """The question's search found a, b; two model-written queries both found c."""
    state = {
        "question": "q",
        "documents": _docs("a", "b"),
        "searches": [{"query": "q", "doc_ids": ["a", "b"], "hop": 1}],
    }
    new = [{"query": f"hop {n}", "doc_ids": ["c"], "hop": second_round} for n in (1, 2)]
    return state, new


@pytest.mark.parametrize(("weight", "order"), [(1.0, ["c", "a", "b"]), (3.0, ["a", "b", "c"])])
def test_later_rounds_push_out_the_first_rounds_hits_only_under_plain_rrf(weight, order):
    state, new = _state_and_new(second_round=2)
    fused = merge_documents(
        state["documents"], ranked(state, new, _docs("c"), RagContext(first_hop_weight=weight))
    )
    assert [d.id for d in fused] == order


def test_one_round_is_plain_rrf_whatever_the_weight():
    """RAG-Fusion and multi-query search side by side in one round: all their queries are equal."""
    state, new = _state_and_new(second_round=1)
    fused = merge_documents(
        state["documents"], ranked(state, new, _docs("c"), RagContext(first_hop_weight=3.0))
    )
    assert [d.id for d in fused] == ["c", "a", "b"]
    assert fused[0].metadata["rrf_score"] == pytest.approx(2 / 61)


def test_first_hop_weight_below_one_is_refused_naming_the_setting():
    with pytest.raises(ValueError, match="first_hop_weight"):
        RagContext(first_hop_weight=0.5)


def test_each_search_records_the_round_it_ran_in():
    from rag_graphs.nodes.retrieve import found

    state, _ = _state_and_new(second_round=2)
    update = found({**state, "hops": 1}, RagContext(), ["hop 1"], [_docs("c")])
    assert update["searches"] == [{"query": "hop 1", "doc_ids": ["c"], "hop": 2}]
    assert [d.id for d in update["documents"]["new"]] == ["c"]  # only the round's hits travel
    fused = merge_documents(state["documents"], update["documents"])
    assert [d.id for d in fused] == ["a", "b", "c"]  # 3/61 > 3/62 > 1/61


def test_fusing_a_round_stamps_copies_and_leaves_the_held_documents_as_they_were():
    """The previous state, the round's update and the search cache may hold the same Document
    objects: a score stamped in place would show up in another run's documents."""
    state, new = _state_and_new(second_round=2)
    held, found = state["documents"], _docs("c")
    fused = merge_documents(held, ranked(state, new, found, RagContext(first_hop_weight=3.0)))
    assert [d.metadata["rrf_score"] for d in fused] == pytest.approx([3 / 61, 3 / 62, 2 / 61])
    assert all("rrf_score" not in d.metadata for d in [*held, *found])
