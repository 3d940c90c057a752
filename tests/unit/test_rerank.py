"""Rerankers of the shared retrieve step: MMR, a tiny locally built cross-encoder, any
LangChain document compressor; bad specs name the setting; every method gets them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.embeddings import Embeddings
from pydantic import ValidationError

from rag_graphs.config.context import RagContext
from rag_graphs.methods.naive import graph
from rag_graphs.search.rerank import CrossEncoderReranker, MMRReranker, reranker_for

VECTORS = {  # the query points at "a"; "a2" nearly duplicates "a"; "b" is the other relevant side
    "q": [1.0, 0.0, 0.0],
    "a": [0.95, 0.31, 0.0],
    "a2": [0.94, 0.34, 0.0],
    "b": [0.7, 0.0, 0.71],
}


class TableEmbeddings(Embeddings):
    """Vectors looked up by text, counting the passages embedded."""

    def __init__(self) -> None:
        self.embedded = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.embedded += len(texts)
        return [VECTORS[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return VECTORS[text]


def docs(*names: str) -> list[Document]:
    return [Document(id=n, page_content=n) for n in names]


def test_mmr_picks_the_other_side_over_a_near_duplicate():
    candidates = docs("a", "a2", "b")  # similarity order: a, a2, b
    kept = MMRReranker(TableEmbeddings(), lambda_mult=0.5).rerank("q", candidates, 2)
    assert [d.id for d in kept] == ["a", "b"]
    relevance_only = MMRReranker(TableEmbeddings(), lambda_mult=1.0).rerank("q", candidates, 2)
    assert [d.id for d in relevance_only] == ["a", "a2"]


def test_mmr_reads_stored_vectors_and_embeds_only_what_the_store_lacks():
    embeddings = TableEmbeddings()
    stored = {"a": VECTORS["a"], "a2": VECTORS["a2"]}
    mmr = MMRReranker(
        embeddings, lambda_mult=0.5, stored=lambda ids: {i: stored[i] for i in ids if i in stored}
    )
    assert [d.id for d in mmr.rerank("q", docs("a", "a2", "b"), 2)] == ["a", "b"]
    assert embeddings.embedded == 1  # only "b"


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("bm42", "unknown reranker; use none, mmr"),
        ("cross-encoder:/no/such/dir", "no cross-encoder directory"),
    ],
)
def test_a_bad_spec_is_one_error_naming_the_setting(spec: str, says: str, monkeypatch):
    with pytest.raises(ValidationError, match=f"RagContext.reranker=.*{says}"):
        RagContext(reranker=spec)
    monkeypatch.setenv("RAG_GRAPHS_RERANKER", spec)
    with pytest.raises(ValidationError, match="environment variable RAG_GRAPHS_RERANKER"):
        RagContext()


def tiny_cross_encoder(where: Path) -> Path:
    """A 2-layer BERT with random weights and a 30-word vocabulary, saved as a CrossEncoder."""
    from sentence_transformers import CrossEncoder
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    words = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        *"alpha beta gamma delta paris rome berlin".split(),
    ]
    vocab = where / "vocab.txt"
    where.mkdir(parents=True)
    vocab.write_text("\n".join(words) + "\n")
    config = BertConfig(
        vocab_size=len(words),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
    )
    config.num_labels = 1
    BertForSequenceClassification(config).save_pretrained(where)
    BertTokenizer(vocab_file=str(vocab)).save_pretrained(where)
    CrossEncoder(str(where), device="cpu", local_files_only=True).save(str(where))
    return where


def test_a_locally_built_cross_encoder_scores_and_keeps_the_best_k(tmp_path: Path):
    model = tiny_cross_encoder(tmp_path / "ce")
    reranker = reranker_for(f"cross-encoder:{model}", TableEmbeddings())
    assert isinstance(reranker, CrossEncoderReranker)
    kept = reranker.rerank("alpha paris", docs("beta rome", "alpha paris", "gamma berlin", "delta"), 3)
    scores = [d.metadata["rerank_score"] for d in kept]
    assert len(kept) == 3 and scores == sorted(scores, reverse=True)
    assert RagContext(reranker=f"cross-encoder:{model}").reranker == f"cross-encoder:{model}"


class Reverse(BaseDocumentCompressor):
    """A compressor whose order is the candidates' reversed: recognisable in the output."""

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        return list(reversed(documents))


def test_the_retrieve_step_fetches_fetch_k_keeps_k_and_says_what_it_dropped(loaded, make_context):
    plain = graph.invoke({"question": "Where was Ilsa Brandt born?"}, context=make_context("Korvik.", k=6))
    order = [d.id for d in plain["documents"]]
    ctx = make_context("Korvik.", k=2, fetch_k=6, reranker=Reverse())
    out = graph.invoke({"question": "Where was Ilsa Brandt born?"}, context=ctx)
    assert [d.id for d in out["documents"]] == order[::-1][:2]
    (note,) = [s for s in out["steps"] if s["kind"] == "note" and "search cache" not in s["text"]]
    assert note["text"].startswith("Reverse: kept 2 of 6; dropped ") and order[0] in note["text"]


@pytest.mark.parametrize("command", [["ask", "Where?"], ["eval", "--dataset", "x"]])
def test_the_cli_names_the_setting_of_a_bad_reranker(command: list[str], tmp_path: Path):
    from typer.testing import CliRunner

    from rag_graphs import cli

    args = [*command, "--store", str(tmp_path / "m.db"), "--reranker", "colbert", "--fetch-k", "30"]
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 1
    assert "RagContext.reranker='colbert': unknown reranker" in " ".join(result.output.split())
