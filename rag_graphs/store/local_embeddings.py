"""A local sentence-transformers model that runs its small calls on one thread (torch or ONNX Runtime).

torch splits every forward pass over all the cores (two here). For a query or a few sentences
the split costs more than it saves, and when anything else runs on the machine (a second
request, llama.cpp in the same process, spaCy, a test worker) torch's threads wait on each other:
on the project's 2-core machines MiniLM's ``embed_query`` took p50 51 ms on one thread against
199 ms on torch's default two, and 8 passages 117 ms against 988 ms (BENCHMARKS.md, "torch's
threads"). Large batches (ingest) keep torch's setting, where a second idle core does pay.

Queries' vectors are kept by text (``QUERY_CACHE`` of them): a run embeds its question for the
dense search, and the extract reader embeds it again beside its sentences for their similarity
(``text.reader.sentence_similarities``, one call with the sentences). For a model that embeds a
query as a passage (no ``query_encode_kwargs``: MiniLM, the default), a small batch takes the
texts it holds from there and embeds only the rest, so the reader pays for its sentences alone
and retrieval's vector is reused without being passed through the graph's state.

Each call sets and restores its own thread's count only (``store.torch_threads.one_thread``): a
batch running meanwhile in another thread keeps its count, and calls overlapping in two threads
each run on one thread and each get their own count back.

With ``bf16`` (set at load from ``store.embed_precision.use_bf16``: the embedded model on a CPU
with native bf16), the linear layers are cast to bf16 and the model traced under bf16 autocast
(``store.traced_bf16``); every torch call runs the traced module, queries and passages alike: it
needs no GIL between kernels, so ingest's embedding threads keep their cores while other threads
run Python. The vectors stay float32 lists of unit length.

With ``onnx_small`` (the embedded model), calls of up to ``SMALL_CALL`` texts run instead on an
ONNX Runtime export of the model's float32 weights made at construction
(``store.onnx_small_calls``): a question in ~5 ms against ~10 ms in bf16 on torch. Their vectors
are float32 ones (within ~2e-7 of torch's float32), so a question ranks against a store written in
bf16 as a float32 question did (BENCHMARKS.md, "round 2: bf16": the same R@5).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_huggingface import HuggingFaceEmbeddings
from pydantic import Field, PrivateAttr

from rag_graphs.store.onnx_small_calls import OnnxSmallCalls, export_small_calls
from rag_graphs.store.torch_threads import one_thread
from rag_graphs.store.traced_bf16 import TracedBf16, trace_bf16

SMALL_CALL = 32
"""Texts up to which a call runs on one thread: queries, the reader's sentences, a reranker's
top passages."""
_NORMALISED = {"normalize_embeddings": True}
"""The only encode settings the ONNX export reproduces (the embedded model's, ``store.embeddings``)."""
QUERY_CACHE = 256
"""Query vectors kept (by text, least recently used out): ~3 MB for MiniLM (384 Python floats each)."""
BATCH = 32
"""Texts per forward pass at least: sentence-transformers' default, kept for passages."""
TOKENS_PER_FORWARD = 4096
"""Padded tokens per forward pass short texts fill (``batch_size``): entity names of ~8 tokens in
batches of 128-256 took 5-25% less CPU (by the hour) than in batches of 32 on one thread in bf16,
never more (each forward pays a fixed cost for its shape; BENCHMARKS.md, "Round 7: wider forward
passes for short texts")."""


def batch_size(texts: list[str]) -> int:
    """Texts per forward pass for ``texts``: ``BATCH``, or more when even the longest is short
    enough that ``BATCH`` of them pad to fewer than ``TOKENS_PER_FORWARD`` tokens (counted as
    one per 4 characters, plus the two special tokens), so entity names and sentences run in a few
    large passes while passages keep theirs."""
    longest = max(map(len, texts), default=0) // 4 + 2
    return max(BATCH, TOKENS_PER_FORWARD // longest)


def _normalised_only(encode_kwargs: dict[str, Any]) -> bool:
    """Whether ``encode_kwargs`` ask for nothing but normalised vectors (and a batch size): what
    the ONNX export and the traced module compute."""
    return {k: v for k, v in encode_kwargs.items() if k != "batch_size"} == _NORMALISED


class LocalEmbeddings(HuggingFaceEmbeddings):
    """``HuggingFaceEmbeddings`` whose queries and small batches run on one torch thread, and
    whose small batches reuse the vectors of texts embedded as queries (``QUERY_CACHE``)."""

    bf16: bool = Field(default=False, frozen=True)
    """Run the model in bf16 (``store.traced_bf16``: its linear layers cast to bf16 and the model
    traced under autocast at construction; where it cannot be traced, float32); False: float32.
    Fixed once constructed."""
    onnx_small: bool = Field(default=False, frozen=True)
    """Run calls of up to ``SMALL_CALL`` texts on an ONNX Runtime export of the model's float32
    weights (``store.onnx_small_calls``: a question in ~5 ms instead of ~10-18 ms on torch), made
    at construction; where it cannot be made, torch runs them. Fixed once constructed."""
    _onnx: OnnxSmallCalls | None = PrivateAttr(default=None)
    _traced: TracedBf16 | None = PrivateAttr(default=None)
    _queries: OrderedDict[str, list[float]] = PrivateAttr(default_factory=OrderedDict)
    _queries_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.onnx_small:  # from the float32 weights, before bf16 casts them
            self._onnx = export_small_calls(self._client, Path(self.model_name))
        if (
            self.bf16
            and _normalised_only(self.encode_kwargs)
            and _normalised_only(self.query_encode_kwargs or self.encode_kwargs)
        ):
            self._traced = trace_bf16(self._client)  # every call then takes it (``_embed``)

    def embed_query(self, text: str) -> list[float]:
        known = self._known([text])
        if text in known:
            return list(known[text])
        with one_thread():
            vector = super().embed_query(text)
        with self._queries_lock:
            self._queries[text] = vector
            while len(self._queries) > QUERY_CACHE:
                self._queries.popitem(last=False)
        return list(vector)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if len(texts) > SMALL_CALL:
            return super().embed_documents(texts)
        known = self._known(texts) if not self.query_encode_kwargs else {}
        rest = [t for t in texts if t not in known]
        fresh: Iterator[list[float]] = iter([])
        if rest:
            with one_thread():
                fresh = iter(super().embed_documents(rest))
        return [list(known[t]) if t in known else next(fresh) for t in texts]

    def _embed(self, texts: list[str], encode_kwargs: dict[str, Any]) -> list[list[float]]:
        """Every call's forward passes (``embed_query``, ``embed_documents``): a small call on the
        ONNX export where there is one, the rest on torch (the traced bf16 module with ``bf16``) in
        batches of ``batch_size`` (a batch size the caller set wins)."""
        settings = {"batch_size": batch_size(texts), **encode_kwargs}
        if _normalised_only(encode_kwargs):
            flat = [t.replace("\n", " ") for t in texts]  # as langchain's _embed
            if self._onnx is not None and len(texts) <= SMALL_CALL:
                return self._onnx.embed(flat)
            if self._traced is not None:
                return self._traced.embed(flat, settings["batch_size"])
        return super()._embed(texts, settings)

    def _known(self, texts: list[str]) -> dict[str, list[float]]:
        """The kept query vectors of ``texts``, each marked as just used."""
        with self._queries_lock:
            found = {t: self._queries[t] for t in texts if t in self._queries}
            for t in found:
                self._queries.move_to_end(t)
        return found
