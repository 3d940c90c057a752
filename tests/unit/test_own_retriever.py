"""Bring your own retriever (issue 29 item 4): ``RagRetriever`` is the shared retrieve step as a
LangChain retriever, and ``RagContext.retriever`` runs every method over the user's own
``BaseRetriever`` or ``VectorStore``, with citations that resolve to the user's documents."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore
from pydantic import ValidationError

from rag_graphs import RagContext, RagRetriever
from rag_graphs.config.errors import SetupError
from rag_graphs.methods import get_graph
from rag_graphs.search.own import content_id
from tests.conftest import fake_chat

QUESTION = "In which town was the founder of the Velmora Institute born?"
FACTS = {
    "velmora": "The Velmora Institute was founded by Ilsa Brandt in 1901.",
    "brandt": "Ilsa Brandt was born in Korvik, a harbour town.",
    "korvik": "Korvik lies on the northern coast.",
}


def test_rag_retriever_returns_what_the_retrieve_step_keeps(loaded, make_context):
    """Search, MMR rerank of fetch_k candidates, neighbour expansion, compression: all applied."""
    options = dict(k=2, fetch_k=6, reranker="mmr", expand="neighbours:1", compress="redundant:0.99")
    out = get_graph("naive").invoke({"question": QUESTION}, context=make_context("Korvik [1].", **options))
    docs = RagRetriever(context=make_context(**options)).invoke(QUESTION)
    assert [d.id for d in docs] == [d.id for d in out["documents"]] == out["steps"][0]["doc_ids"]
    assert [d.page_content for d in docs] == [d.page_content for d in out["documents"]]
    assert any("expand neighbours:1" in s.get("text", "") for s in out["steps"])  # the options ran
    assert len(docs) > 2  # the 2 kept, and their neighbours


def _store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents([Document(page_content=t, metadata={"source": f"{n}.txt"}) for n, t in FACTS.items()])
    return store


def _own(tmp_path: Path, *replies: str, retriever, **settings) -> RagContext:
    """A context on a store path that does not exist: nothing may open or create it."""
    return RagContext(
        chat_model=fake_chat(*replies),
        embeddings=DeterministicFakeEmbedding(size=32),
        store_uri=str(tmp_path / "no-store"),
        retriever=retriever,
        **settings,
    )


def _resolve(out: dict, store: InMemoryVectorStore) -> list[str]:
    """Each citation's text in the user's store (KeyError when one does not resolve)."""
    held = {d.id: d.page_content for d in store.get_by_ids([c["chunk_id"] for c in out["citations"]])}
    return [held[c["chunk_id"]] for c in out["citations"]]


def test_naive_over_a_vector_store_cites_the_users_documents(tmp_path: Path):
    store = _store()
    ctx = _own(tmp_path, "Korvik [1].", retriever=store, k=2)
    assert ctx.search_mode == "dense"  # the default with a retriever of one's own
    out = get_graph("naive").invoke({"question": QUESTION}, context=ctx)
    assert out["answer"] == "Korvik [1]." and len(out["documents"]) == 2
    assert _resolve(out, store) == [out["documents"][0].page_content]
    citation = out["citations"][0]
    assert citation["source"].endswith(".txt") and (citation["kind"], citation["page"]) == ("text", -1)
    assert not (tmp_path / "no-store").exists()


def test_ircot_over_a_vector_store_retriever_cites_the_users_documents(tmp_path: Path):
    store = _store()
    replies = [FACTS["velmora"], FACTS["brandt"], "So the answer is: Korvik.", "Korvik [1][2]."]
    ctx = _own(tmp_path, *replies, retriever=store.as_retriever(search_kwargs={"k": 5}), k=2)
    out = get_graph("ircot").invoke({"question": QUESTION}, context=ctx)
    assert out["usage"]["retrievals"] == 3 and out["answer"] == "Korvik [1][2]."
    assert len(_resolve(out, store)) == 2
    assert {d.id for d in out["documents"]} <= {d.id for d in store.get_by_ids(list(store.store))}


class NoIds(BaseRetriever):
    """A retriever whose documents carry no id and no metadata."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [Document(page_content=t) for t in FACTS.values()]


def test_a_hit_without_an_id_gets_its_text_hash_and_provenance_defaults(tmp_path: Path):
    ctx = _own(tmp_path, "Korvik [2].", retriever=NoIds(), k=2)
    out = get_graph("naive").invoke({"question": QUESTION}, context=ctx)
    assert [d.id for d in out["documents"]] == [content_id(FACTS["velmora"]), content_id(FACTS["brandt"])]
    assert out["citations"][0]["chunk_id"] == content_id(FACTS["brandt"])
    assert out["citations"][0]["source"] == "" and out["citations"][0]["cref"] == ""
    assert RagRetriever(context=ctx).invoke(QUESTION)[0].id == content_id(FACTS["velmora"])  # stable


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"search_mode": "hybrid"}, "search_mode='hybrid': hybrid (BM25) and graph search"),
        ({"search_mode": "graph"}, "set search_mode='dense'"),
        ({"search_unit": "sentence"}, "search_unit='sentence': sentence search reads"),
        ({"expand": "neighbours:1"}, "set expand='none'"),
        ({"search_filter": 'source like "%a%"'}, "search_filter/tenant/tags/sources: these are Milvus"),
        ({"tenant": "acme"}, "filter in your retriever instead"),
    ],
)
def test_options_that_need_the_milvus_store_are_refused(settings, expected):
    with pytest.raises(ValidationError) as error:
        RagContext(retriever=_store(), **settings)
    message = next(e["msg"] for e in error.value.errors())
    assert "\n" not in message and "RagContext.retriever" in message and expected in message
    assert "leave RagContext.retriever unset" in message


@pytest.mark.parametrize(
    ("method", "expected"), [("hipporag", "hipporag method"), ("raptor", "raptor method")]
)
def test_methods_that_read_the_stores_own_collections_are_refused(tmp_path: Path, method, expected):
    ctx = _own(tmp_path, retriever=_store())
    with pytest.raises(Exception) as error:
        get_graph(method).invoke({"question": QUESTION}, context=ctx)
    assert isinstance(error.value.__cause__ or error.value, SetupError)
    message = str(error.value)
    assert "\n" not in message and "RagContext.retriever" in message and expected in message
