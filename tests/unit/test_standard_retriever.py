"""LangChain's standard retriever suite (langchain-tests ``RetrieversIntegrationTests``) on
``RagRetriever``, over a real Milvus Lite store with the suite's deterministic fake embeddings:
integration packages run these suites, and ``k`` must mean what it means to every LangChain
retriever (a constructor field and an ``invoke`` argument). Then what the suite does not check:
how ``k`` ranks against the context's ``k``, and that a bad ``k`` is refused naming where it came from.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests
from pydantic import ValidationError

from rag_graphs import RagContext, RagRetriever
from rag_graphs.store import ChunkIndex

QUERY = "Where was Ilsa Brandt born?"
FACTS = [
    "Ilsa Brandt was born in Korvik, a harbour town.",
    "The Velmora Institute was founded by Ilsa Brandt in 1901.",
    "Korvik lies on the northern coast of the province.",
    "The Halden Foundation funds libraries in three provinces.",
    "Granite from the Korvik quarries built the institute's hall.",
    "The province's capital holds the institute's archive.",
]


@pytest.fixture
def stored(index: ChunkIndex) -> ChunkIndex:
    """The temporary Milvus Lite collection holding ``FACTS`` (more chunks than any k asked)."""
    meta = {"source": "/facts.md", "doc_hash": "h"}
    index.add([Document(page_content=t, metadata={**meta, "chunk_id": f"c{i}"}) for i, t in enumerate(FACTS)])
    index.flush()
    return index


class TestRagRetrieverStandard(RetrieversIntegrationTests):
    """The whole standard suite, sync and async; the context is the default k (4)."""

    context: RagContext

    @pytest.fixture(autouse=True)
    def _on_the_store(self, stored: ChunkIndex, make_context) -> None:
        self.context = make_context()

    @property
    def retriever_constructor(self) -> type[RagRetriever]:
        return RagRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"context": self.context}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


def _ids(docs: list[Document]) -> list[str]:
    return [str(d.id) for d in docs]


def test_k_is_the_context_k_for_this_retriever_and_a_call_k_for_one_call(stored, make_context):
    ctx = make_context(k=5)
    assert len(RagRetriever(context=ctx).invoke(QUERY)) == 5  # unset: the context's k
    retriever = RagRetriever(context=ctx, k=2)
    two = retriever.invoke(QUERY)
    assert _ids(two) == _ids(RagRetriever(context=make_context(k=2)).invoke(QUERY))  # the same search
    assert len(retriever.invoke(QUERY, k=3)) == 3  # the call's k over the retriever's
    assert _ids(retriever.invoke(QUERY)) == _ids(two)  # for that call only
    assert ctx.k == 5 and retriever.k == 2  # nothing was changed in place


async def test_the_async_call_takes_k_too(stored, make_context):
    retriever = RagRetriever(context=make_context(k=5))
    one = await retriever.ainvoke(QUERY, k=1)
    assert _ids(one) == _ids(retriever.invoke(QUERY, k=1))


def test_k_counts_what_the_reranker_keeps(stored, make_context):
    docs = RagRetriever(context=make_context(reranker="mmr", fetch_k=6), k=2).invoke(QUERY)
    assert len(docs) == 2


@pytest.mark.parametrize("k", [0, -1, 16_385, 2.5, "3", True])
def test_a_bad_constructor_k_is_refused_naming_the_field(k, make_context):
    with pytest.raises(ValidationError, match=r"RagRetriever\.k="):
        RagRetriever(context=make_context(), k=k)


@pytest.mark.parametrize("k", [0, 16_385, "3"])
def test_a_bad_call_k_is_refused_before_any_search(k, tmp_path):
    ctx = RagContext(store_uri=str(tmp_path / "never-opened"), embeddings="embedded")
    with pytest.raises(ValueError, match=r"^RagRetriever\.invoke\(k=\.\.\.\)=.*1 to 16,384"):
        RagRetriever(context=ctx).invoke(QUERY, k=k)
    assert not (tmp_path / "never-opened").exists()
