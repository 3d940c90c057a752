"""Where a run's wall time goes: inside models, inside search, or in the graph itself; and the order
methods run a question in, so that their seconds compare (``rotated``)."""

from __future__ import annotations

import threading
import time
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from rag_graphs.search.retrieval import SEARCH_TAG


class Timer(BaseCallbackHandler):
    """Callback handler that sums the seconds spent in chat-model calls and in searches
    (retriever runs, and runs tagged ``SEARCH_TAG``).

    Pass one per graph run (``config={"callbacks": [timer]}``); the graph's
    wall time minus both sums is the orchestration overhead (LangGraph,
    prompt formatting, parsing, state merging).
    """

    def __init__(self) -> None:
        self.model_seconds = 0.0
        self.search_seconds = 0.0
        self._started: dict[UUID, float] = {}
        self._lock = threading.Lock()

    def _start(self, run_id: UUID) -> None:
        with self._lock:
            self._started[run_id] = time.perf_counter()

    def _stop(self, run_id: UUID, kind: str) -> None:
        with self._lock:
            start = self._started.pop(run_id, None)
            if start is None:
                return
            elapsed = time.perf_counter() - start
            if kind == "model":
                self.model_seconds += elapsed
            else:
                self.search_seconds += elapsed

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._start(run_id)

    def on_llm_start(self, serialized: Any, prompts: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._start(run_id)

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._stop(run_id, "model")

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._stop(run_id, "model")

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        if SEARCH_TAG in (kwargs.get("tags") or []):  # batched searches (``search_many``)
            self._start(run_id)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._stop(run_id, "search")  # a no-op for runs that were not started as searches

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._stop(run_id, "search")

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: UUID, **kwargs: Any) -> None:
        self._start(run_id)

    def on_retriever_end(self, documents: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._stop(run_id, "search")

    def on_retriever_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._stop(run_id, "search")


def rotated(methods: list[str], turn: int) -> list[str]:
    """``methods`` in the order they run the ``turn``-th question: rotated by ``turn``, and reversed
    every other round of ``len(methods)`` questions, so over ``2 * len(methods)`` questions each
    method runs before each other one half the time. They run one after another on the same
    question, and a later one finds what an earlier one left warm (the question's vector, which
    the embedded model keeps; the store's pages; the search cache): in one fixed order the later
    methods' seconds read low. ``auto`` run after ``hipporag``, routing every question to it, took
    0.43 s a question against hipporag's own 0.65 s on MuSiQue, with the search cache off
    (BENCHMARKS.md, issue 46)."""
    if not methods:
        return []
    start = turn % len(methods)
    order = methods[start:] + methods[:start]
    return order[::-1] if (turn // len(methods)) % 2 else order
