"""``LocalEmbeddings``: queries and small batches run on one torch thread, large batches on
torch's setting, and the setting a caller had comes back however the calls overlap."""

from __future__ import annotations

import threading

import pytest
import torch
from langchain_huggingface import HuggingFaceEmbeddings

from rag_graphs.store import local_embeddings
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


@pytest.fixture
def parent(monkeypatch):
    """The parent's calls, by kind and texts, each text's vector its length and its first letter's code."""
    calls: list[tuple[str, list[str]]] = []

    def vector(text: str) -> list[float]:
        return [float(len(text)), float(ord(text[0]))]

    def query(self, text):
        calls.append(("query", [text]))
        return vector(text)

    def documents(self, texts):
        calls.append(("documents", list(texts)))
        return [vector(t) for t in texts]

    monkeypatch.setattr(HuggingFaceEmbeddings, "embed_query", query)
    monkeypatch.setattr(HuggingFaceEmbeddings, "embed_documents", documents)
    return calls


def test_a_small_batch_reuses_a_query_vector_and_embeds_only_the_rest(parent):
    """The reader's call (its sentences and the question) after retrieval embedded the question."""
    model = LocalEmbeddings.model_construct()
    asked = model.embed_query("Who founded Korvik?")
    got = model.embed_documents(
        ["Korvik was founded by Ilsa Brandt.", "Who founded Korvik?", "It lies north."]
    )
    assert parent == [
        ("query", ["Who founded Korvik?"]),
        ("documents", ["Korvik was founded by Ilsa Brandt.", "It lies north."]),
    ]
    assert got == [[34.0, 75.0], asked, [14.0, 73.0]]


def test_a_repeated_query_is_embedded_once_and_its_vector_cannot_be_changed_by_a_caller(parent):
    model = LocalEmbeddings.model_construct()
    first = model.embed_query("Who founded Korvik?")
    first.append(99.0)
    assert model.embed_query("Who founded Korvik?") == [19.0, 87.0]
    assert parent == [("query", ["Who founded Korvik?"])]


def test_a_batch_of_known_queries_makes_no_model_call(parent):
    model = LocalEmbeddings.model_construct()
    model.embed_query("alpha?")
    model.embed_query("beta?")
    assert model.embed_documents(["beta?", "alpha?", "beta?"]) == [[5.0, 98.0], [6.0, 97.0], [5.0, 98.0]]
    assert [kind for kind, _ in parent] == ["query", "query"]


def test_a_model_with_query_settings_embeds_every_text_as_a_passage(parent):
    """An asymmetric model (a query prompt) embeds a query unlike a passage: nothing is reused."""
    model = LocalEmbeddings.model_construct(query_encode_kwargs={"prompt": "query: "})
    model.embed_query("Who founded Korvik?")
    model.embed_documents(["Korvik was founded by Ilsa Brandt.", "Who founded Korvik?"])
    assert parent[-1] == ("documents", ["Korvik was founded by Ilsa Brandt.", "Who founded Korvik?"])


def test_query_vectors_are_kept_up_to_the_cache_size_least_recently_used_out(parent, monkeypatch):
    monkeypatch.setattr(local_embeddings, "QUERY_CACHE", 2)
    model = LocalEmbeddings.model_construct()
    for text in ("a?", "b?", "a?", "c?"):  # "a?" used again: "b?" is the least recent when "c?" comes
        model.embed_query(text)
    parent.clear()
    model.embed_documents(["a?", "b?", "c?"])
    assert parent == [("documents", ["b?"])]


def test_a_large_batch_goes_whole_to_the_model(parent):
    model = LocalEmbeddings.model_construct()
    model.embed_query("a?")
    model.embed_documents(["a?"] * (SMALL_CALL + 1))
    assert parent[-1] == ("documents", ["a?"] * (SMALL_CALL + 1))
