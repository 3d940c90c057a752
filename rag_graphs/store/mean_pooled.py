"""A sentence-transformers model of the embedded kind as one module to trace: the transformer, mean
pooling over the attention mask and L2 normalisation, as its ``Transformer``, ``Pooling(mean)`` and
``Normalize`` modules compute them.

Two tracers use it: ``store.onnx_small_calls`` (exported to ONNX Runtime for the small calls) and
``store.traced_bf16`` (TorchScript in bf16 for the rest). Pooling runs in float32 whatever the
transformer's precision, so both give float32 vectors of unit length.
"""

from __future__ import annotations

from typing import Any

import torch

LAYOUT = ("Transformer", "Pooling", "Normalize")
"""The sentence-transformers modules ``MeanPooled`` reproduces, in order (Normalize optional: the
embedded model's callers also ask ``encode`` to normalise)."""


TRACE_EXAMPLE = ["an example sentence to trace", "two words"]
"""The texts both tracers trace on: two lengths, so the graph is traced with padding."""


def tokenizer_of(model: Any) -> Any:
    """The model's own tokenizing (truncation at ``max_seq_length``): texts in, features out."""
    return getattr(model, "preprocess", None) or model.tokenize  # sentence-transformers 6 / 5


def layout_problem(model: Any) -> str | None:
    """Why ``model`` (a ``SentenceTransformer``) is not ``LAYOUT`` with mean pooling, or None."""
    kinds = tuple(type(module).__name__ for module in model)
    if kinds not in (LAYOUT, LAYOUT[:2]):
        return f"modules {kinds} are not {' + '.join(LAYOUT)}"
    if getattr(model[1], "pooling_mode", "mean") != "mean":
        return f"pooling {model[1].pooling_mode!r} is not mean"
    return None


class MeanPooled(torch.nn.Module):
    """The transformer, mean pooling over the attention mask (in float32), L2 normalisation."""

    def __init__(self, transformer: torch.nn.Module) -> None:
        super().__init__()
        self.transformer = transformer

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.transformer(
            input_ids=input_ids, attention_mask=attention_mask
        ).last_hidden_state.float()
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, p=2, dim=1)
