"""``store.embed_precision``: the embedded MiniLM runs in bf16 only where the CPU has native bf16
and the setting allows it; its vectors stay float32 lists of unit length, close to float32's."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from rag_graphs.store import embed_precision, embeddings, local_embeddings
from rag_graphs.store.embed_precision import BF16_ENV, bf16_setting, native_bf16, use_bf16
from rag_graphs.store.embeddings import embedded_model_dir
from rag_graphs.store.local_embeddings import LocalEmbeddings
from rag_graphs.store.torch_threads import one_thread


@pytest.fixture
def probe(monkeypatch):
    """``native_bf16`` asking a scripted CPU (torch's capability probe replaced), uncached."""

    def set_cpu(machine: str, capabilities: dict | None) -> None:
        monkeypatch.setattr(embed_precision.platform, "machine", lambda: machine)
        if capabilities is None:
            monkeypatch.delattr(torch.cpu, "get_capabilities")
        else:
            monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: capabilities)
        native_bf16.cache_clear()

    yield set_cpu
    native_bf16.cache_clear()


@pytest.mark.parametrize(
    ("machine", "capabilities", "native"),
    [
        ("x86_64", {"amx_bf16": True, "avx512_bf16": True}, True),
        ("x86_64", {"amx_bf16": False, "avx512_bf16": True}, True),  # Zen 4: no AMX
        ("AMD64", {"amx_bf16": True}, True),  # Windows' name
        ("x86_64", {"avx512_f": True, "avx2": True, "avx512_bf16": False}, False),  # AVX512 alone emulates
        ("x86_64", {}, False),
        ("aarch64", {"bf16": True}, False),  # not measured there
        ("x86_64", None, False),  # a torch without the probe
    ],
)
def test_native_bf16_follows_torchs_cpu_probe(probe, machine, capabilities, native):
    probe(machine, capabilities)
    assert native_bf16() is native


@pytest.mark.parametrize(
    ("value", "native", "setting", "used"),
    [
        (None, True, "auto", True),
        ("", True, "auto", True),
        (" AUTO ", True, "auto", True),
        ("auto", False, "auto", False),  # no native units: float32
        ("off", True, "off", False),
        ("Off", False, "off", False),
    ],
)
def test_the_setting_and_the_cpu_decide_together(monkeypatch, value, native, setting, used):
    if value is None:
        monkeypatch.delenv(BF16_ENV, raising=False)
    else:
        monkeypatch.setenv(BF16_ENV, value)
    monkeypatch.setattr(embed_precision, "native_bf16", lambda: native)
    assert (bf16_setting(), use_bf16()) == (setting, used)


def test_an_unknown_setting_is_refused_naming_the_variable(monkeypatch):
    monkeypatch.setenv(BF16_ENV, "on")
    with pytest.raises(ValueError, match=f"{BF16_ENV}='on': expected one of auto, off"):
        use_bf16()


@pytest.mark.parametrize("used", [True, False])
def test_only_the_embedded_spec_is_loaded_in_bf16(monkeypatch, tmp_path, used):
    made: list[dict] = []
    monkeypatch.setattr(embed_precision, "use_bf16", lambda: used)
    monkeypatch.setattr(local_embeddings, "LocalEmbeddings", lambda **kwargs: made.append(kwargs) or kwargs)
    embeddings._load("embedded")
    embeddings._load(f"hf:{tmp_path}")  # another local model: not measured in bf16, so float32
    assert [m["bf16"] for m in made] == [used, False]


@pytest.fixture(scope="module")
def models() -> dict[str, LocalEmbeddings]:
    """The embedded model as ``store.embeddings`` loads it, once in each precision."""
    return {
        arm: LocalEmbeddings(
            model=str(embedded_model_dir()),
            model_kwargs={"device": "cpu", "local_files_only": True},
            encode_kwargs={"normalize_embeddings": True},
            bf16=arm == "bf16",
        )
        for arm in ("fp32", "bf16")
    }


TEXTS = ["Scott Derrickson", "Who directed Doctor Strange?", "Ed Wood was an American filmmaker. " * 20]


def test_bf16_vectors_are_float32_lists_of_unit_length_close_to_float32s(models):
    fp32, bf16 = (models[a].embed_documents(TEXTS) for a in ("fp32", "bf16"))
    question = models["bf16"].embed_query(TEXTS[1])
    for vector in [*bf16, question]:
        assert len(vector) == 384 and all(type(x) is float for x in vector)
        assert math.isclose(math.fsum(x * x for x in vector), 1.0, abs_tol=1e-5)
    cosines = [math.fsum(a * b for a, b in zip(u, v, strict=True)) for u, v in zip(fp32, bf16, strict=True)]
    assert min(cosines) > 0.999 and max(cosines) < 1.0  # close, and not float32's own numbers
    asked = models["fp32"].embed_query(TEXTS[1])
    assert math.fsum(a * b for a, b in zip(asked, question, strict=True)) > 0.999


def test_bf16_casts_the_linear_layers_once_and_the_off_path_stays_float32(models):
    def dtypes(model: LocalEmbeddings) -> set[torch.dtype]:
        return {m.weight.dtype for m in model._client.modules() if isinstance(m, torch.nn.Linear)}

    assert dtypes(models["bf16"]) == {torch.bfloat16}
    assert dtypes(models["fp32"]) == {torch.float32}
    with one_thread():  # as small calls run (one thread rounds short inputs unlike two)
        plain = models["fp32"]._client.encode([TEXTS[0]], normalize_embeddings=True)[0].tolist()
    assert models["fp32"].embed_documents([TEXTS[0]])[0] == plain  # float32 as before, bit for bit
    with pytest.raises((ValueError, TypeError)):
        models["bf16"].bf16 = False  # the weights are bf16 now: the flag cannot be turned off


def test_a_bf16_model_called_from_another_thread_makes_the_same_vectors(models):
    """Ingest embeds from two threads at once through the one traced module."""
    here = models["bf16"].embed_documents(TEXTS[:2])
    with ThreadPoolExecutor(max_workers=2) as pool:
        there = list(pool.map(models["bf16"].embed_documents, [TEXTS[:2]] * 4))
    assert there == [here] * 4
