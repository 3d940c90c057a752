"""``store.traced_bf16``: the embedded MiniLM in bf16 as one traced module. The trace is made on a
two-text example under autocast, so what must hold is that its graph, run without autocast, gives
what ``encode`` gave under autocast bit for bit on every other batch and length (so stores written
before and after are the same), and the vectors come back in the caller's order."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from sentence_transformers import SentenceTransformer

from rag_graphs.store.embeddings import embedded_model_dir
from rag_graphs.store.traced_bf16 import TracedBf16, trace_bf16

TEXTS = [
    "Scott Derrickson",
    "Who directed Doctor Strange?",
    "Ed Wood was an American filmmaker, actor and writer. " * 30,  # past the 256-token truncation
    "Paris",
    "Rome",  # one token, as the one above: a batch of the two has no padding
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris.",
]


@pytest.fixture(scope="module")
def loaded() -> tuple[SentenceTransformer, SentenceTransformer, TracedBf16]:
    """The float32 model, a copy with bf16 linear layers (run eagerly under autocast), and the
    traced path of a third copy."""
    fp32 = SentenceTransformer(str(embedded_model_dir()), device="cpu", local_files_only=True)
    eager = copy.deepcopy(fp32)
    for layer in eager.modules():
        if isinstance(layer, torch.nn.Linear):
            layer.weight.data, layer.bias.data = layer.weight.data.bfloat16(), layer.bias.data.bfloat16()
    traced_model = copy.deepcopy(fp32)
    traced = trace_bf16(traced_model)
    assert traced is not None
    return fp32, eager, traced


def _eager(model: SentenceTransformer, texts: list[str]) -> list[list[float]]:
    """What the model gave before the trace: ``encode`` under bf16 autocast, in one batch."""
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return model.encode(texts, batch_size=len(texts), normalize_embeddings=True).tolist()


@pytest.mark.parametrize(
    "texts", [TEXTS[:1], TEXTS[3:5], TEXTS, TEXTS[2:3] * 3], ids=["one", "no-padding", "mixed", "truncated"]
)
def test_the_trace_gives_encodes_autocast_numbers_bit_for_bit_on_other_shapes(loaded, texts):
    _, eager, traced = loaded
    assert traced.embed(texts, batch_size=len(texts)) == _eager(eager, texts)  # bit for bit


def test_batches_of_texts_of_equal_length_are_cut_as_encode_cuts_them(loaded):
    """Ties in length are ordered as ``encode`` orders them, so each forward pass holds the same
    texts (a text's bf16 vector depends on the padding its batch gives it)."""
    _, eager, traced = loaded
    texts = ["Oslo", "Paris is big", "Rome", "Lima", "Kyiv", "Bern and Basel", "Riga"]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = eager.encode(texts, batch_size=2, normalize_embeddings=True).tolist()
    assert traced.embed(texts, batch_size=2) == expected


def test_vectors_come_back_in_the_callers_order_whatever_the_batches(loaded):
    _, _, traced = loaded
    whole = traced.embed(TEXTS, batch_size=64)
    assert len(whole) == len(TEXTS)
    ones = [traced.embed([t], batch_size=1)[0] for t in TEXTS]
    for got, alone in zip(whole, ones, strict=True):  # padding moves bf16's last bits, no more
        assert math.fsum(a * b for a, b in zip(got, alone, strict=True)) > 0.9999


def test_vectors_are_float32_unit_length_and_close_to_float32s(loaded):
    fp32, _, traced = loaded
    bf16 = traced.embed(TEXTS, batch_size=32)
    reference = fp32.encode(TEXTS, normalize_embeddings=True).tolist()
    for vector, exact in zip(bf16, reference, strict=True):
        assert all(type(x) is float for x in vector)
        assert math.isclose(math.fsum(x * x for x in vector), 1.0, abs_tol=1e-5)
        assert 0.999 < math.fsum(a * b for a, b in zip(vector, exact, strict=True)) < 1.0


def test_a_model_of_another_layout_stays_float32_and_says_why(monkeypatch, caplog):
    model = SentenceTransformer(str(embedded_model_dir()), device="cpu", local_files_only=True)
    monkeypatch.setattr(model[1], "pooling_mode", "cls")
    with caplog.at_level("INFO", logger="rag_graphs.store.traced_bf16"):
        assert trace_bf16(model) is None
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert "bf16 not used" in caplog.text and "pooling" in caplog.text


def test_a_failed_trace_puts_the_float32_weights_back_as_they_were(loaded, monkeypatch, caplog):
    import rag_graphs.store.traced_bf16 as module

    def broken(*_args: object) -> None:
        raise RuntimeError("tracer refused")

    monkeypatch.setattr(module, "_trace", broken)
    model = SentenceTransformer(str(embedded_model_dir()), device="cpu", local_files_only=True)
    with caplog.at_level("INFO", logger="rag_graphs.store.traced_bf16"):
        assert trace_bf16(model) is None
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    fp32, _, _ = loaded  # not a bf16 round trip: the weights are the original ones, bit for bit
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), fp32.parameters(), strict=True))
    assert "tracer refused" in caplog.text
