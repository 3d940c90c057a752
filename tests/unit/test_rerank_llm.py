"""The LLM listwise reranker (RankGPT-style): the order a reply names, parsed robustly; an
unusable reply or a model error keeps the search order and the note says so."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from rag_graphs.config.context import RagContext
from rag_graphs.methods.naive import graph
from rag_graphs.search.rerank import LLMReranker, parse_order, reranker_for
from tests.conftest import fake_chat, recording_chat

QUESTION = "Where was Ilsa Brandt born?"


@pytest.mark.parametrize(
    ("reply", "order"),
    [
        ("[3] > [1] > [2]", [2, 0, 1]),
        ("[2] > [2] > [9] > [0]", [1, 0, 2]),  # repeats and unknown numbers ignored, rest appended
        ("Ranking: [3] > [1]. Passage [3] names the town.", [2, 0, 1]),
        ("3 > 1", [2, 0, 1]),  # no brackets: bare numbers
        (" 2, 3.", [1, 2, 0]),
        ("Passage 2 says she was born in 1921.", None),  # digits in prose are no ranking
        ("I cannot rank these.", None),
        ("[7] > [8]", None),  # nothing usable
        ("", None),
    ],
)
def test_the_order_a_reply_names_is_parsed_robustly(reply: str, order: list[int] | None):
    assert parse_order(reply, 3) == order


def docs(*names: str) -> list[Document]:
    return [Document(id=n, page_content=f"passage {n}") for n in names]


class NoEmbeddings(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise AssertionError("the LLM reranker embeds nothing")

    def embed_query(self, text: str) -> list[float]:
        raise AssertionError("the LLM reranker embeds nothing")


def test_the_llm_reranker_keeps_the_k_best_in_the_replys_order_from_fenced_candidates():
    model = recording_chat("[3] > [1]")
    reranker = reranker_for("llm", NoEmbeddings(), model=lambda: model)
    assert isinstance(reranker, LLMReranker)
    assert [d.id for d in reranker.rerank(QUESTION, docs("a", "b", "c", "d"), 3)] == ["c", "a", "b"]
    assert reranker.fallback == "" and len(reranker.replies) == 1
    (prompt,) = model.seen
    shown = str(prompt[-1].content)
    assert "[3]\n<passage>\npassage c\n</passage>" in shown and QUESTION in shown


def test_an_unparsable_reply_or_a_model_error_keeps_the_search_order_and_says_why():
    rambling = LLMReranker(lambda: fake_chat("The passages are about people."))
    assert [d.id for d in rambling.rerank(QUESTION, docs("a", "b", "c"), 2)] == ["a", "b"]
    assert rambling.fallback.startswith("unparsable reply 'The passages")
    broken = LLMReranker(lambda: fake_chat())  # no reply left: the model raises
    assert [d.id for d in broken.rerank(QUESTION, docs("a", "b", "c"), 2)] == ["a", "b"]
    assert broken.fallback.startswith("model error (") and broken.replies == []


def test_the_setting_accepts_llm_and_needs_a_model():
    assert RagContext(reranker=" LLM ").reranker == "llm"
    with pytest.raises(ValueError, match="RagContext.reranker='llm': no chat model"):
        reranker_for("llm", NoEmbeddings())


def test_a_naive_run_reranks_by_the_chat_model_and_counts_its_call(make_context, loaded):
    plain = graph.invoke({"question": QUESTION}, context=make_context("Korvik.", k=4, search_cache=0))
    order = [d.id for d in plain["documents"]]
    ctx = make_context("[4] > [3]", "Korvik.", k=2, fetch_k=4, search_cache=0, reranker="llm")
    out = graph.invoke({"question": QUESTION}, context=ctx)
    assert [d.id for d in out["documents"]] == [order[3], order[2]]
    (note,) = [s for s in out["steps"] if s["kind"] == "note" and s["text"].startswith("llm:")]
    assert note["text"].startswith("llm: kept 2 of 4; dropped ") and "search order" not in note["text"]
    assert out["usage"]["llm_calls"] == plain["usage"]["llm_calls"] + 1


def test_a_naive_run_whose_ranking_reply_is_unusable_keeps_the_search_order_and_says_so(make_context, loaded):
    plain = graph.invoke({"question": QUESTION}, context=make_context("Korvik.", k=2, search_cache=0))
    ctx = make_context("no idea", "Korvik.", k=2, fetch_k=4, search_cache=0, reranker="llm")
    out = graph.invoke({"question": QUESTION}, context=ctx)
    assert [d.id for d in out["documents"]] == [d.id for d in plain["documents"]]
    (note,) = [s for s in out["steps"] if s["kind"] == "note" and s["text"].startswith("llm:")]
    assert "unparsable reply 'no idea'; kept the search order" in note["text"]
