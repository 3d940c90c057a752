"""The embedded MiniLM's small calls on ONNX Runtime: the same vectors as sentence-transformers'
float32 model, small calls routed there and large ones to torch, and the torch path kept wherever
the export cannot be made."""

from __future__ import annotations

import logging
import sys

import numpy as np
import pytest
from langchain_huggingface import HuggingFaceEmbeddings
from sentence_transformers import SentenceTransformer

from rag_graphs.store.embeddings import embedded_model_dir
from rag_graphs.store.local_embeddings import SMALL_CALL, LocalEmbeddings
from rag_graphs.store.onnx_small_calls import OnnxSmallCalls, export_small_calls

LONG = " ".join(["The Dundee Canal was proposed in 1814 and never finished."] * 60)  # > 256 tokens


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformer:
    """The wheel's MiniLM in float32, as sentence-transformers loads it."""
    return SentenceTransformer(str(embedded_model_dir()), device="cpu", local_files_only=True)


@pytest.fixture(scope="module")
def exported(minilm) -> OnnxSmallCalls:
    made = export_small_calls(minilm)
    assert made is not None
    return made


@pytest.mark.parametrize(
    "texts",
    [
        ["Who founded the company that built the Dundee Canal?"],
        ["a", "Which river flows through the city where Korvik was born?", "  spaced  out  ", ""],
        [LONG, "short"],
        [f"question {i} about entity number {i * 7}" for i in range(SMALL_CALL)],
    ],
    ids=["one question", "mixed lengths", "truncated", "a full small call"],
)
def test_the_export_gives_sentence_transformers_float32_vectors(minilm, exported, texts):
    expected = minilm.encode(texts, normalize_embeddings=True)
    got = np.array(exported.embed(texts), dtype=np.float32)
    assert got.shape == expected.shape
    assert np.abs(got - expected).max() < 1e-5
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_the_export_embeds_nothing_for_no_texts(exported):
    assert exported.embed([]) == []


class Scripted:
    """An ONNX session stand-in: records each call's texts, answers with its length."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [[float(len(t))] for t in texts]


@pytest.fixture
def torch_calls(monkeypatch):
    """The texts of each call that reached torch (sentence-transformers' ``encode``)."""
    calls: list[list[str]] = []

    def encode(self, texts, encode_kwargs):
        calls.append(list(texts))
        return [[-1.0] for _ in texts]

    monkeypatch.setattr(HuggingFaceEmbeddings, "_embed", encode)
    return calls


def test_small_calls_go_to_the_export_and_large_ones_to_torch(torch_calls):
    model = LocalEmbeddings.model_construct(encode_kwargs={"normalize_embeddings": True})
    session = Scripted()
    model._onnx = session
    assert model.embed_query("who?\nwhen?") == [10.0]
    assert model.embed_documents(["one", "three"]) == [[3.0], [5.0]]
    assert model.embed_documents(["p"] * (SMALL_CALL + 1)) == [[-1.0]] * (SMALL_CALL + 1)
    assert session.calls == [["who? when?"], ["one", "three"]]  # newlines as langchain's _embed
    assert torch_calls == [["p"] * (SMALL_CALL + 1)]


def test_other_encode_settings_stay_on_torch(torch_calls):
    model = LocalEmbeddings.model_construct(encode_kwargs={"normalize_embeddings": False})
    model._onnx = Scripted()
    assert model.embed_documents(["one"]) == [[-1.0]]
    assert torch_calls == [["one"]]


def test_without_onnxruntime_the_model_keeps_torch_and_says_why(minilm, monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails as if not installed
    with caplog.at_level(logging.INFO, logger="rag_graphs.store.onnx_small_calls"):
        assert export_small_calls(minilm) is None
    assert "onnxruntime is not installed" in caplog.text


def test_a_model_not_pooled_by_mean_keeps_torch(minilm, monkeypatch, caplog):
    monkeypatch.setattr(minilm[1], "pooling_mode", "cls")
    with caplog.at_level(logging.INFO, logger="rag_graphs.store.onnx_small_calls"):
        assert export_small_calls(minilm) is None
    assert "pooling 'cls' is not mean" in caplog.text


def test_an_exporter_failure_keeps_torch(minilm, monkeypatch, caplog):
    import torch

    def broken(*args, **kwargs):
        raise RuntimeError("unsupported operator")

    monkeypatch.setattr(torch.onnx, "export", broken)
    with caplog.at_level(logging.INFO, logger="rag_graphs.store.onnx_small_calls"):
        assert export_small_calls(minilm) is None
    assert "the export failed (RuntimeError: unsupported operator)" in caplog.text


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty export cache for the test (``$XDG_CACHE_HOME``)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "rag-graphs" / "onnx"


def test_a_kept_export_is_loaded_instead_of_exported_again(minilm, cache, monkeypatch):
    import torch

    first = export_small_calls(minilm, embedded_model_dir())
    kept = list(cache.glob("*.onnx"))
    assert first is not None and len(kept) == 1 and not list(cache.glob("*.part"))

    def no_export(*args, **kwargs):
        raise AssertionError("exported again")

    monkeypatch.setattr(torch.onnx, "export", no_export)
    second = export_small_calls(minilm, embedded_model_dir())
    assert second is not None
    assert second.embed(["Korvik"]) == first.embed(["Korvik"])


def test_a_torn_kept_export_is_made_again(minilm, cache):
    assert export_small_calls(minilm, embedded_model_dir()) is not None
    (kept,) = cache.glob("*.onnx")
    kept.write_bytes(kept.read_bytes()[:1000])
    again = export_small_calls(minilm, embedded_model_dir())
    assert again is not None
    expected = minilm.encode(["Korvik"], normalize_embeddings=True)
    assert np.abs(np.array(again.embed(["Korvik"])) - expected).max() < 1e-5
    assert kept.stat().st_size > 1_000_000  # written whole again


def test_other_weights_get_their_own_export(minilm, cache, tmp_path):
    assert export_small_calls(minilm, embedded_model_dir()) is not None
    other = tmp_path / "other-model"
    other.mkdir()
    (other / "model.safetensors").write_bytes(b"not the same weights")
    assert export_small_calls(minilm, other) is not None
    assert len(list(cache.glob("*.onnx"))) == 2


def test_a_cache_that_cannot_be_written_costs_nothing_but_the_export(minilm, tmp_path, monkeypatch, caplog):
    blocked = tmp_path / "a-file"
    blocked.write_text("the cache's parent is a file")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    with caplog.at_level(logging.INFO, logger="rag_graphs.store.onnx_small_calls"):
        made = export_small_calls(minilm, embedded_model_dir())
    assert made is not None and len(made.embed(["Korvik"])[0]) == 384
    assert "could not keep the export" in caplog.text


def test_without_a_home_folder_the_export_is_made_and_not_kept(minilm, monkeypatch):
    from pathlib import Path

    def homeless():
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(homeless))
    made = export_small_calls(minilm, embedded_model_dir())
    assert made is not None and len(made.embed(["Korvik"])[0]) == 384
