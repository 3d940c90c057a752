"""``ChunkPieces``: a group's chunks embedded in pieces that two threads share (ingest's overlap
after bf16 embedding made NER plus entity names about as long as the chunks)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from langchain_core.embeddings import Embeddings

from rag_graphs.ingestion import storing
from rag_graphs.ingestion.storing import PIECE, ChunkPieces


class Recording(Embeddings):
    """Each text's vector is its length; every call's texts and thread are kept. The first call
    can be held until a call arrives from another thread (``hold_first``)."""

    def __init__(self, fail_on: str | None = None, hold_first: bool = False) -> None:
        self.calls: list[tuple[str, list[str]]] = []
        self.fail_on = fail_on
        self.other_came = threading.Event()
        self.hold_first = hold_first
        self._lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            first = not self.calls
            self.calls.append((threading.current_thread().name, list(texts)))
            if not first:
                self.other_came.set()
        if first and self.hold_first:
            assert self.other_came.wait(timeout=30), "no other thread took a piece"
        if self.fail_on in texts:
            raise RuntimeError("model failed")
        return [[float(len(t))] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [float(len(text))]


TEXTS = {f"c{n}": "x" * (1 + n % 97) for n in range(3 * PIECE + 5)}


def test_every_chunk_gets_its_own_vector_in_pieces_longest_first():
    model = Recording()
    pieces = ChunkPieces(model, TEXTS)
    pieces.work()
    assert pieces.vectors() == {i: [float(len(t))] for i, t in TEXTS.items()}
    assert [len(texts) for _, texts in model.calls] == [PIECE, PIECE, PIECE, 5]
    lengths = [len(t) for _, texts in model.calls for t in texts]
    assert lengths == sorted(lengths, reverse=True)


def test_two_threads_share_the_pieces_and_each_piece_is_embedded_once():
    model = Recording(hold_first=True)  # the first piece waits until the other thread has one
    pieces = ChunkPieces(model, TEXTS)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-embed") as pool:
        background = pool.submit(pieces.work)
        pieces.work()
        background.result()
    threads = {name for name, _ in model.calls}
    assert threading.current_thread().name in threads and any(t.startswith("ingest-embed") for t in threads)
    embedded = [t for _, texts in model.calls for t in texts]
    assert len(embedded) == len(TEXTS)
    assert pieces.vectors() == {i: [float(len(t))] for i, t in TEXTS.items()}


def test_a_failed_piece_leaves_the_group_without_vectors_and_stops_the_rest():
    longest = max(TEXTS.values(), key=len)
    model = Recording(fail_on=longest)  # in the first piece
    pieces = ChunkPieces(model, TEXTS)
    pieces.work()
    assert pieces.vectors() is None
    assert len(model.calls) == 1


def test_no_new_chunks_make_no_call():
    model = Recording()
    pieces = ChunkPieces(model, {})
    pieces.work()
    assert pieces.vectors() == {} and model.calls == []


def test_pieces_run_on_one_torch_thread(monkeypatch):
    used: list[bool] = []
    monkeypatch.setattr(
        storing, "embed_on_one_thread", lambda model, texts: used.append(True) or model.embed_documents(texts)
    )
    pieces = ChunkPieces(Recording(), dict(list(TEXTS.items())[:3]))
    pieces.work()
    assert used == [True]
