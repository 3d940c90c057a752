"""``LocalEmbeddings``: queries and small batches run on one torch thread, large batches on
torch's setting, and the count each calling thread had comes back however the calls overlap."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from langchain_huggingface import HuggingFaceEmbeddings

from rag_graphs.store import local_embeddings
from rag_graphs.store.local_embeddings import SMALL_CALL, LocalEmbeddings
from rag_graphs.store.torch_threads import one_thread


def new_thread_count() -> int:
    """The count a thread created now starts on (torch's process-wide value)."""
    seen: list[int] = []
    worker = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    worker.start()
    worker.join()
    return seen[0]


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


def test_queries_and_small_batches_run_on_one_thread_and_large_batches_do_not(two_torch_threads, seen):
    model = LocalEmbeddings.model_construct()
    model.embed_query("who founded it?")
    model.embed_documents(["a sentence."] * SMALL_CALL)
    model.embed_documents(["a passage."] * (SMALL_CALL + 1))
    assert seen == [("query", 1), (f"{SMALL_CALL} texts", 1), (f"{SMALL_CALL + 1} texts", 2)]
    assert torch.get_num_threads() == 2


def test_the_setting_comes_back_when_a_call_fails(two_torch_threads, monkeypatch):
    def broken(self, text):
        raise RuntimeError("model failed")

    monkeypatch.setattr(HuggingFaceEmbeddings, "embed_query", broken)
    with pytest.raises(RuntimeError, match="model failed"):
        LocalEmbeddings.model_construct().embed_query("q")
    assert torch.get_num_threads() == 2


def test_overlapping_calls_in_two_threads_each_run_on_one_thread_and_each_get_their_own_count_back(
    two_torch_threads, monkeypatch
):
    """Two threads with counts of their own (2 and 3), the second's query starting while the
    first's runs and still running when the first's returns. torch's count is each thread's own:
    a switch counted across threads (the first in sets 1, the last out restores) left the second
    on its 3 and the first on 1, and restored the first's 2 in the second thread."""
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    ready = threading.Barrier(2)
    inside: dict[str, int] = {}
    after: dict[str, int] = {}
    waited: list[bool] = []

    def query(self, text):
        inside[text] = torch.get_num_threads()
        if text == "first?":
            first_in.set()
            waited.append(second_in.wait(10))
        else:
            second_in.set()
            waited.append(first_out.wait(10))
        return [0.0]

    monkeypatch.setattr(HuggingFaceEmbeddings, "embed_query", query)
    model = LocalEmbeddings.model_construct()

    def caller(text: str, own: int, start: threading.Event | None) -> None:
        torch.get_num_threads()  # the thread's first torch call sets its count to the process's
        torch.set_num_threads(own)
        ready.wait(10)  # both threads hold their own count before either call
        if start:
            waited.append(start.wait(10))
        model.embed_query(text)
        after[text] = torch.get_num_threads()
        if text == "first?":
            first_out.set()

    workers = [
        threading.Thread(target=caller, args=("first?", 2, None)),
        threading.Thread(target=caller, args=("second?", 3, first_in)),
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(20)
    assert waited == [True] * 3  # the calls did overlap as scripted
    assert inside == {"first?": 1, "second?": 1}
    assert after == {"first?": 2, "second?": 3}
    assert torch.get_num_threads() == 2  # this thread made no call: untouched
    assert new_thread_count() == 3  # the last thread out's own count, never the blocks' 1


def test_a_block_inside_a_block_leaves_the_thread_on_one_until_the_outer_one_ends(two_torch_threads):
    """A small batch inside ingest's block (``embed_on_one_thread``): the inner block restores
    nothing, so the outer block's call keeps one thread to its end."""
    with one_thread():
        with one_thread():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    assert new_thread_count() == 2


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


def test_passages_keep_batches_of_32_and_short_texts_fill_a_forward_pass_up_to_the_token_budget():
    budget = local_embeddings.TOKENS_PER_FORWARD
    assert local_embeddings.batch_size(["word " * 200] * 100) == local_embeddings.BATCH
    assert local_embeddings.batch_size([]) == budget // 2
    names = ["Walt Disney", "101 Dalmatians (1996 film)"]  # the longest: 26 characters, ~8 tokens
    assert local_embeddings.batch_size(names) == budget // (26 // 4 + 2)
    # a single long text among the names sets the batch for the whole call
    assert local_embeddings.batch_size(names + ["x" * 4000]) == local_embeddings.BATCH


def test_the_batch_size_reaches_sentence_transformers_and_a_callers_own_wins(monkeypatch):
    asked: list[int] = []

    def encode(texts, show_progress_bar=None, batch_size=32, **kwargs):
        asked.append(batch_size)
        return np.zeros((len(texts), 1))

    client = type("Client", (), {"encode": staticmethod(encode)})()
    model = LocalEmbeddings.model_construct(encode_kwargs={})
    object.__setattr__(model, "_client", client)
    names = [f"entity {i}" for i in range(200)]  # 10 characters: 4,096 // 4 = 1,024 a pass
    model.embed_documents(names)
    model.encode_kwargs = {"batch_size": 8}
    model.embed_documents(names)
    assert asked == [local_embeddings.TOKENS_PER_FORWARD // (10 // 4 + 2), 8]
