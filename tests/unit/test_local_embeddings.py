"""``LocalEmbeddings``: queries and small batches run on one torch thread, large batches on
torch's setting, and the setting a caller had comes back however the calls overlap."""

from __future__ import annotations

import threading

import pytest
import torch
from langchain_huggingface import HuggingFaceEmbeddings

from rag_graphs.store.local_embeddings import SMALL_CALL, LocalEmbeddings, one_thread


@pytest.fixture
def threads():
    """torch on two threads for the test (whatever the worker's share), restored after."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def seen(monkeypatch):
    """The thread count each of the parent's embedding calls ran under, instead of a model."""
    calls: list[tuple[str, int]] = []

    def query(self, text):
        calls.append(("query", torch.get_num_threads()))
        return [0.0]

    def documents(self, texts):
        calls.append((f"{len(texts)} texts", torch.get_num_threads()))
        return [[0.0] for _ in texts]

    monkeypatch.setattr(HuggingFaceEmbeddings, "embed_query", query)
    monkeypatch.setattr(HuggingFaceEmbeddings, "embed_documents", documents)
    return calls


def test_queries_and_small_batches_run_on_one_thread_and_large_batches_do_not(threads, seen):
    model = LocalEmbeddings.model_construct()
    model.embed_query("who founded it?")
    model.embed_documents(["a sentence."] * SMALL_CALL)
    model.embed_documents(["a passage."] * (SMALL_CALL + 1))
    assert seen == [("query", 1), (f"{SMALL_CALL} texts", 1), (f"{SMALL_CALL + 1} texts", 2)]
    assert torch.get_num_threads() == 2


def test_the_setting_comes_back_when_a_call_fails(threads, monkeypatch):
    def broken(self, text):
        raise RuntimeError("model failed")

    monkeypatch.setattr(HuggingFaceEmbeddings, "embed_query", broken)
    with pytest.raises(RuntimeError, match="model failed"):
        LocalEmbeddings.model_construct().embed_query("q")
    assert torch.get_num_threads() == 2


def test_overlapping_calls_restore_the_setting_only_when_the_last_one_leaves(threads):
    """Two threads' calls overlapping in either order: a naive save/restore per call would leave
    torch on one thread for good (the second saved the first's 1)."""
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    during: list[int] = []

    def first():
        with one_thread():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    def second():
        first_in.wait(5)
        with one_thread():
            second_in.set()
            first_out.wait(5)
            during.append(torch.get_num_threads())

    workers = [threading.Thread(target=first), threading.Thread(target=second)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(10)
    assert during == [1]
    assert torch.get_num_threads() == 2
