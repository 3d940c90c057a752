"""The embedded MiniLM on torch in bf16, as one traced TorchScript module (``trace_bf16``).

Why bf16: on a CPU with native bf16 units (``store.embed_precision``) MiniLM's matrix products run
on them, ~2.8x faster than float32; embedding is ingest's largest stage. The linear layers' weights
are cast to bf16 once and the pass runs as under ``torch.autocast("cpu", torch.bfloat16)``: matrix
products and attention in bf16, layer norms, residual adds, pooling and normalisation in float32,
so the vectors are float32, unit length, within cosine 0.99997 of float32's.

Why traced: in eager mode every operation goes back to Python (and so to the GIL) between kernels,
and whenever another thread runs Python (Milvus Lite's in-process server validating an insert
float by float, Docling converting, spaCy tokenizing) the embedding thread waits up to the GIL's
switch interval (5 ms) before each of a forward pass's ~100 operations: beside a thread spinning
in Python, 64-passage pieces took 2.1x as long and 128-name pieces 12.6x; traced, 1.06x and 1.9x
(``bench/embed_gil.py``). A traced module runs the whole pass in TorchScript's interpreter without
the GIL (BENCHMARKS.md, "Round 9: the embedding traced"). The trace is made under autocast, so
its graph holds autocast's casts and runs without it: the same numbers as eager autocast, bit for
bit, on any batch and length (the trace is of one small example, ~0.2 s at load). Not frozen:
``torch.jit.freeze`` made passages ~1.7x slower.

Tokenizing and batching are sentence-transformers' (its ``preprocess``: truncation at
``max_seq_length``; texts longest first, so a batch pads little), as ``encode`` does them.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

import numpy as np
import torch

from rag_graphs.store.mean_pooled import TRACE_EXAMPLE, MeanPooled, layout_problem, tokenizer_of

log = logging.getLogger(__name__)


class TracedBf16:
    """A traced bf16 ``MeanPooled`` of one model and that model's tokenizer: unit-length float32
    vectors, bit for bit as ``SentenceTransformer.encode(normalize_embeddings=True)`` gives them
    under bf16 autocast (its order of texts and batches, its pooling, its two normalisations).
    Thread-safe: ingest calls it from two threads at once."""

    def __init__(self, module: torch.jit.ScriptModule, tokenize: Any) -> None:
        self._module = module
        self._tokenize = tokenize

    def embed(self, texts: list[str], batch_size: int) -> list[list[float]]:
        """The vectors of ``texts``, in forward passes of ``batch_size`` texts, longest first."""
        order = [int(i) for i in np.argsort([-len(t) for t in texts])]  # encode's order, ties too
        out: list[list[float]] = [[] for _ in texts]
        with torch.no_grad():
            for start in range(0, len(order), batch_size):
                part = order[start : start + batch_size]
                features = self._tokenize([texts[i] for i in part])
                pooled = self._module(features["input_ids"], features["attention_mask"])
                # encode normalises twice (the model's Normalize module, then normalize_embeddings):
                # so here too, and the vectors equal encode's (eager autocast) bit for bit
                vectors = torch.nn.functional.normalize(pooled, p=2, dim=1).tolist()
                for i, vector in zip(part, vectors, strict=True):
                    out[i] = vector
        return out


def trace_bf16(model: Any) -> TracedBf16 | None:
    """``model`` (a ``SentenceTransformer``) with its linear layers cast to bf16 in place and traced,
    or None (logged, the model left as it was, in float32) where its layout is not the embedded
    kind's or the trace fails. After it, every call must go through the returned object: the
    model's own ``encode`` would feed float32 activations to bf16 weights."""
    reason = layout_problem(model)
    if reason is None:
        tokenize = tokenizer_of(model)
        kept = _cast_linear_layers(model[0].auto_model)
        try:
            return TracedBf16(_trace(model[0].auto_model, tokenize), tokenize)
        except Exception as exc:  # noqa: BLE001 - the float32 path stays
            for parameter, weights in kept:
                parameter.data = weights
            reason = f"the trace failed ({type(exc).__name__}: {exc})"
    log.info("embedding: bf16 not used: %s", reason)
    return None


def _cast_linear_layers(transformer: torch.nn.Module) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Cast the weights and biases of the linear layers to bf16 (what autocast would cast at every
    call, once); return each parameter with its float32 tensor, to put back if the trace fails."""
    kept: list[tuple[torch.Tensor, torch.Tensor]] = []
    for layer in transformer.modules():
        if isinstance(layer, torch.nn.Linear):
            for parameter in (layer.weight, layer.bias):
                if parameter is not None:
                    kept.append((parameter, parameter.data))
                    parameter.data = parameter.data.to(torch.bfloat16)
    return kept


def _trace(transformer: torch.nn.Module, tokenize: Any) -> torch.jit.ScriptModule:
    """``MeanPooled(transformer)`` traced under bf16 autocast on a two-text example."""
    pooled = MeanPooled(transformer).eval()
    sample = tokenize(TRACE_EXAMPLE)
    with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on Python values taken as constants
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return torch.jit.trace(pooled, (sample["input_ids"], sample["attention_mask"]), check_trace=False)
