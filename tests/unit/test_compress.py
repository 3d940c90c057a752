"""Contextual compression of the shared retrieve step: the embeddings and redundancy filters
over stored vectors, the LLM extractor, chains, tokens saved, ids kept, bad specs named."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ValidationError

from rag_graphs.config.context import RagContext
from rag_graphs.methods.naive import graph
from rag_graphs.search.compress import (
    EmbeddingsFilter,
    LLMExtractor,
    RedundantFilter,
    check_compress,
    compressor_for,
    tokens,
)

QUESTION = "Where was Ilsa Brandt born?"
VECTORS = {  # "q" is the query; "a2" nearly duplicates "a"; "c" is unrelated to the query
    "q": [1.0, 0.0, 0.0],
    "a": [0.95, 0.31, 0.0],
    "a2": [0.94, 0.34, 0.0],
    "b": [0.7, 0.0, 0.71],
    "c": [0.0, 1.0, 0.0],
}


class TableEmbeddings(Embeddings):
    """Vectors by text; counts what it embeds (stored vectors should spare the passages)."""

    def __init__(self) -> None:
        self.documents = 0
        self.queries = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents += len(texts)
        return [VECTORS[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries += 1
        return VECTORS[text]


def docs(*names: str) -> list[Document]:
    return [Document(id=n, page_content=n, metadata={"source": f"{n}.md"}) for n in names]


def stored(ids: list[str]) -> dict[str, list[float]]:
    return {i: VECTORS[i] for i in ids}


def test_the_embeddings_filter_drops_what_is_far_from_the_query_using_stored_vectors():
    embeddings = TableEmbeddings()
    cut = EmbeddingsFilter(embeddings, 0.5, stored).compress("q", docs("a", "c", "b"))
    assert [d.id for d in cut.kept] == ["a", "b"] and cut.dropped == ["c"]
    assert (embeddings.queries, embeddings.documents) == (1, 0)  # the query once, no passage
    strict = EmbeddingsFilter(TableEmbeddings(), 0.9, stored).compress("q", docs("a", "c", "b"))
    assert [d.id for d in strict.kept] == ["a"]


def test_the_redundancy_filter_drops_the_lower_ranked_near_duplicate():
    filt = RedundantFilter(TableEmbeddings(), 0.95, stored)
    assert [d.id for d in filt.compress("q", docs("a", "b", "a2")).kept] == ["a", "b"]
    assert [d.id for d in filt.compress("q", docs("a2", "a", "b")).kept] == ["a2", "b"]
    loose = RedundantFilter(TableEmbeddings(), 0.9999, stored)  # cosine(a, a2) is 0.9995
    assert loose.compress("q", docs("a", "a2")).dropped == []


LOCK = threading.Lock()


class ByPassage(BaseChatModel):
    """Replies by the passage a prompt fences (``replies``); raises for passages in ``fail``;
    the extraction prompts it saw and the most calls it had running at once are kept."""

    replies: dict[str, str] = {}
    fail: set[str] = set()
    answer: str = "Korvik [1]."
    seen: list = []
    running: int = 0
    most: int = 0

    @property
    def _llm_type(self) -> str:
        return "by-passage"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        text = str(messages[-1].content)
        with LOCK:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(0.01)
        try:
            if "NO_OUTPUT" not in str(messages[0].content):
                return _result(self.answer)
            self.seen.append(text)
            passage = text.split("<passage>\n", 1)[1].split("\n</passage>", 1)[0]
            if passage in self.fail:
                raise RuntimeError("model down")
            return _result(self.replies.get(passage, "NO_OUTPUT"))
        finally:
            with LOCK:
                self.running -= 1


def _result(text: str) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


def test_the_llm_extractor_keeps_answering_sentences_and_drops_no_output():
    first = Document(id="x", page_content="Ilsa Brandt was born in Korvik. She liked tea.", metadata={"p": 1})
    model = ByPassage(
        replies={
            first.page_content: "Ilsa Brandt was born in Korvik.",
            "Nothing here.": "  ",  # an empty reply drops the passage too
            "Short.": "Short. And a longer invented sentence.",  # longer than the passage: kept as is
        },
        fail={"Down."},
    )
    others = [Document(id=i, page_content=t) for i, t in [("y", "Nothing here."), ("z", "Short.")]]
    extra = [Document(id="w", page_content="Weather report."), Document(id="v", page_content="Down.")]
    cut = LLMExtractor(lambda: model, max_concurrency=2).compress(QUESTION, [first, *others, *extra])
    assert [d.id for d in cut.kept] == ["x", "z", "v"] and cut.dropped == ["y", "w"]
    assert cut.kept[0].page_content == "Ilsa Brandt was born in Korvik."
    assert cut.kept[0].metadata == {"p": 1, "compressed_from_chars": len(first.page_content)}
    assert cut.kept[1].page_content == "Short." and cut.kept[2].page_content == "Down."  # error: whole
    assert cut.shortened == ["x"] and cut.kept_on_error == 1 and len(cut.replies) == 4
    assert all("<passage>\n" in p and "\n</passage>" in p for p in model.seen)  # fenced as data
    assert model.most <= 2  # the batch's concurrency limit holds


def test_only_sentences_copied_from_the_passage_replace_it():
    model = ByPassage(
        replies={
            "Brandt taught music. She lived in Oslo.": "Brandt taught music in Norway.\nShe  lived in oslo.",
            "Korvik is a village.": "Korvik is a town in Norway.",  # a rewrite: nothing copied
        }
    )
    passages = [
        Document(id="u", page_content="Brandt taught music. She lived in Oslo."),
        Document(id="t", page_content="Korvik is a village."),
    ]
    cut = LLMExtractor(lambda: model).compress(QUESTION, passages)
    assert [d.page_content for d in cut.kept] == ["She  lived in oslo.", "Korvik is a village."]
    assert cut.shortened == ["u"] and cut.unfaithful == 1
    chain = compressor_for("llm", TableEmbeddings(), model=lambda: model)
    assert chain is not None
    assert "1 kept whole (the reply was not copied from the passage)" in chain.compress(
        QUESTION, passages
    ).describe("llm")


def test_a_chain_applies_its_filters_in_order_and_reports_the_tokens_saved():
    chain = compressor_for(" Embeddings:0.5 , redundant:0.95", TableEmbeddings(), stored=stored)
    assert chain is not None
    out = chain.compress("q", docs("a", "a2", "c", "b"))
    assert [d.id for d in out.kept] == ["a", "b"] and out.dropped == ["c", "a2"]
    assert out.tokens_saved == 0  # one-letter passages: under a token each
    long = [Document(id=n, page_content=n * 40) for n in ("a", "c")]
    big = compressor_for("embeddings:0.5", TableEmbeddings(), stored=stored)
    assert big is not None
    result = big.compress("q", long)
    assert result.tokens_saved == tokens("c" * 40) == 10
    assert result.describe("embeddings:0.5") == (
        "compress embeddings:0.5: dropped 1 (c), shortened 0; ~10 prompt tokens saved"
    )
    assert compressor_for("none", TableEmbeddings()) is None


@pytest.mark.parametrize(
    "spec", ["gzip", "embeddings", "embeddings:", "embeddings:1.5", "redundant:x", "none,llm", "llm,"]
)
def test_a_bad_spec_is_one_error_naming_the_setting(spec: str, monkeypatch):
    with pytest.raises(ValidationError, match=r"RagContext.compress=.*unknown filter") as caught:
        RagContext(compress=spec)
    assert caught.value.error_count() == 1
    monkeypatch.setenv("RAG_GRAPHS_COMPRESS", spec)
    with pytest.raises(ValidationError, match="environment variable RAG_GRAPHS_COMPRESS"):
        RagContext()


def test_a_good_spec_is_normalised():
    assert check_compress(" LLM , Redundant:0.9") == "llm,redundant:0.9"
    assert RagContext(compress="embeddings:0.4,redundant:0.95").compress == "embeddings:0.4,redundant:0.95"
    assert RagContext().compress == "none"


@pytest.mark.parametrize("run", ["invoke", "ainvoke"])
def test_a_naive_run_with_llm_compression_cuts_keeps_ids_and_says_so(run: str, make_context, loaded):
    plain = graph.invoke({"question": QUESTION}, context=make_context("Korvik [1].", k=3, search_cache=0))
    texts = {d.id: d.page_content for d in plain["documents"]}
    first_id = plain["documents"][0].id
    first = texts[first_id]
    model = ByPassage(replies={first: first[:40]})  # the best passage shortened, the others dropped
    ctx = make_context(k=3, search_cache=0, chat_model=model, compress="llm")
    if run == "invoke":
        out = graph.invoke({"question": QUESTION}, context=ctx)
    else:
        out = asyncio.run(graph.ainvoke({"question": QUESTION}, context=ctx))
    assert [d.id for d in out["documents"]] == [first_id]
    assert out["documents"][0].page_content == first[:40]
    assert out["documents"][0].metadata["compressed_from_chars"] == len(first)
    (note,) = [s for s in out["steps"] if s["kind"] == "note" and s["text"].startswith("compress llm")]
    saved = sum(tokens(t) for t in texts.values()) - tokens(first[:40])
    assert "dropped 2" in note["text"] and f"~{saved} prompt tokens saved" in note["text"]
    assert set(note["doc_ids"]) == set(texts) - {first_id}
    assert {c["chunk_id"] for c in out["citations"]} <= {first_id}  # citations resolve to a kept chunk
    assert out["usage"]["llm_calls"] == plain["usage"]["llm_calls"] + 3  # one extraction per passage


def test_the_cli_names_the_setting_of_a_bad_compress(tmp_path):
    from typer.testing import CliRunner

    from rag_graphs import cli

    args = ["ask", "Where?", "--store", str(tmp_path / "m.db"), "--compress", "zip"]
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 1
    assert "RagContext.compress='zip': unknown filter 'zip'" in " ".join(result.output.split())


def test_a_naive_run_with_the_embeddings_filter_keeps_what_its_stored_vectors_put_near_the_query(
    make_context, loaded, fake_embeddings
):
    plain = graph.invoke({"question": QUESTION}, context=make_context("Korvik.", k=6, search_cache=0))
    ids = [str(d.id) for d in plain["documents"]]
    query = np.array(fake_embeddings.embed_query(QUESTION))
    cosine = {
        i: float(np.dot(v, query) / np.linalg.norm(v) / np.linalg.norm(query))
        for i, v in loaded.vectors(ids).items()
    }
    threshold = sorted(cosine.values())[len(ids) // 2]  # about half pass
    spec = f"embeddings:{threshold:.6f}"
    out = graph.invoke(
        {"question": QUESTION}, context=make_context("Korvik.", k=6, search_cache=0, compress=spec)
    )
    near = [i for i in ids if cosine[i] >= float(f"{threshold:.6f}")]
    assert 0 < len(near) < len(ids)
    assert [d.id for d in out["documents"]] == near
    (note,) = [s for s in out["steps"] if s["kind"] == "note" and s["text"].startswith("compress")]
    assert set(note["doc_ids"]) == set(ids) - set(near) and "prompt tokens saved" in note["text"]
