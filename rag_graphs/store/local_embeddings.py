"""A local sentence-transformers model that runs its small calls on one torch thread.

torch splits every forward pass over all the cores (two here). For a query or a few sentences
the split costs more than it saves, and when anything else runs on the machine (a second
request, llama.cpp in the same process, spaCy, a test worker) torch's threads wait on each other:
on the project's 2-core machines MiniLM's ``embed_query`` took p50 51 ms on one thread against
199 ms on torch's default two, and 8 passages 117 ms against 988 ms (BENCHMARKS.md, "torch's
threads"). Large batches (ingest) keep torch's setting, where a second idle core does pay.

torch's thread count is one setting for the whole process, so the switch is counted: the first
small call in sets one thread, the last one out restores the setting it found. A batch running
meanwhile in another thread runs on one thread for that moment (slower, never wrong).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from langchain_huggingface import HuggingFaceEmbeddings

SMALL_CALL = 32
"""Texts up to which a call runs on one thread: queries, the reader's sentences, a reranker's
top passages."""


class _OneThread:
    """torch on one intra-op thread while at least one small call runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inside = 0
        self._restore = 0

    @contextmanager
    def __call__(self) -> Iterator[None]:
        import torch

        with self._lock:
            if self._inside == 0:
                self._restore = torch.get_num_threads()
                torch.set_num_threads(1)
            self._inside += 1
        try:
            yield
        finally:
            with self._lock:
                self._inside -= 1
                if self._inside == 0:
                    torch.set_num_threads(self._restore)


one_thread = _OneThread()


class LocalEmbeddings(HuggingFaceEmbeddings):
    """``HuggingFaceEmbeddings`` whose queries and small batches run on one torch thread."""

    def embed_query(self, text: str) -> list[float]:
        with one_thread():
            return super().embed_query(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if len(texts) > SMALL_CALL:
            return super().embed_documents(texts)
        with one_thread():
            return super().embed_documents(texts)
