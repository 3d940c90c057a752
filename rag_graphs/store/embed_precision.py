"""Whether the embedded MiniLM runs in bfloat16 (``store.traced_bf16`` runs it).

Why: on a CPU with native bf16 units (Intel AMX or AVX512-BF16: Sapphire Rapids and later, Zen 4
and later) torch runs MiniLM's matrix products on them, and embedding is ingest's largest stage:
256 HotpotQA passages on one torch thread took 3.98 s in bf16 (autocast) against 11.16 s in
float32 (2.8x), with vectors at cosine >= 0.99997 to the float32 ones, so a store written in
float32 and queried in bf16 (or the reverse) ranks as one made one way (BENCHMARKS.md, "Ingest
throughput (issue 47)", "round 2: bf16"). Layer norms, pooling and normalisation stay float32,
so the vectors are float32 and unit length as before. On a CPU without those units
torch emulates bf16 and runs slower than float32, so ``auto`` uses it only where the CPU reports
them (``native_bf16``).

The setting, ``RAG_GRAPHS_EMBED_BF16``: ``auto`` (the default: bf16 where native) or ``off``
(float32 everywhere). ``off`` is for bit-for-bit reproducible vectors across machines: bf16
vectors differ from float32 ones by ~1e-3 per coordinate, so two machines, one with AMX and one
without, store slightly different vectors for the same text (graph search's entity linking, which
compares name vectors, can then break an exact tie differently). Read once, when the model loads.
"""

from __future__ import annotations

import os
import platform
from functools import lru_cache

BF16_ENV = "RAG_GRAPHS_EMBED_BF16"
CHOICES = ("auto", "off")
NATIVE_FLAGS = ("amx_bf16", "avx512_bf16")
"""torch's names (``torch.cpu.get_capabilities``) of the x86 units that make bf16 matrix products fast."""


def bf16_setting() -> str:
    """``RAG_GRAPHS_EMBED_BF16`` (``auto`` when unset or empty).

    Raises:
        ValueError: a value other than ``auto`` or ``off``.
    """
    raw = os.environ.get(BF16_ENV, "").strip().lower() or "auto"
    if raw not in CHOICES:
        raise ValueError(f"{BF16_ENV}={raw!r}: expected one of {', '.join(CHOICES)}")
    return raw


@lru_cache(maxsize=1)
def native_bf16() -> bool:
    """Whether this CPU has bf16 matrix units torch uses (AMX or AVX512-BF16 on x86-64).

    Read from torch's own CPU probe (cpuinfo, the same one that picks its kernels), not
    ``/proc/cpuinfo``: the probe exists on every OS torch runs on, and ``get_cpu_capability()``
    (``AVX512``) does not tell bf16 apart. Other architectures get False: autocast's bf16 speed on
    ARM depends on the build's kernels, not measured here. A torch without the probe
    (``torch.cpu.get_capabilities`` came in torch 2.6) gets False too.
    """
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        import torch

        capabilities = torch.cpu.get_capabilities()
    except (ImportError, AttributeError, RuntimeError):
        return False
    return any(bool(capabilities.get(flag, False)) for flag in NATIVE_FLAGS)


def use_bf16() -> bool:
    """What the embedded model is loaded with: ``auto`` and a native bf16 CPU (``native_bf16``)."""
    return bf16_setting() == "auto" and native_bf16()
