"""Ingest's embedding beside entity extraction (issue 47): a group's chunks are embedded in a
thread of their own while the extractor runs, every embedding of the embedded model on one torch
thread, and what is stored is what the sequential order stored (scripted fakes, no timing); the
threads this leaves behind start on the process's torch count, not on one."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import ClassVar

import numpy
import torch
from langchain_core.embeddings import DeterministicFakeEmbedding

from rag_graphs.entity_graph.build import embed_on_one_thread
from rag_graphs.entity_graph.rows import entity_table
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.store import ChunkIndex
from rag_graphs.store.fields import ENTITIES_FIELD
from rag_graphs.store.local_embeddings import SMALL_CALL, LocalEmbeddings

FILES = {
    "institute.txt": "Velmora Institute\n\nThe Velmora Institute was founded by Ilsa Brandt in Korvik.",
    "brandt.txt": "Ilsa Brandt\n\nIlsa Brandt was born in Korvik and studied in Lunmar.",
    "harbour.txt": "Osterby\n\nThe harbour of Osterby is busy in spring.",
}
NAMES = ("Velmora Institute", "Ilsa Brandt", "Korvik", "Lunmar", "Osterby")


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text)
    return folder


def mentions(texts: list[str]) -> list[list[str]]:
    """A scripted extractor: the known names each text contains."""
    return [[n for n in NAMES if n in t] for t in texts]


class Recording(DeterministicFakeEmbedding):
    """Records each call's texts and thread; ``started`` is set once chunks (not names) are embedded."""

    calls: ClassVar[list] = []  # each instance gets its own (``_model``)
    started: ClassVar[threading.Event | None] = None
    fail_on: ClassVar[str | None] = None

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append((threading.current_thread().name, list(texts)))
        if self.started is not None and any("\n" in t or len(t) > 40 for t in texts):
            self.started.set()
        if self.fail_on and len(texts) > 1 and any(self.fail_on in t for t in texts):
            raise RuntimeError("the model failed on this batch")
        return super().embed_documents(texts)


def _model(**fields) -> Recording:
    model = Recording(size=16)
    object.__setattr__(model, "calls", [])
    for name, value in fields.items():
        object.__setattr__(model, name, value)
    return model


def _stored(vector: list[float]) -> list[float]:
    """The vector as Milvus keeps it (float32)."""
    return numpy.asarray(vector, dtype=numpy.float32).tolist()


def _rows(index: ChunkIndex) -> tuple[dict, dict]:
    chunks = {r["pk"]: r for batch in index.stored.iterate(["*"]) for r in batch}
    table = entity_table(index)
    table.load()
    return chunks, {r["pk"]: r for batch in table.iterate(["*"]) for r in batch}


def test_chunks_are_embedded_in_their_own_thread_while_the_extractor_runs(tmp_path):
    started = threading.Event()
    model = _model(started=started)
    seen: list[bool] = []

    def waiting(texts: list[str]) -> list[list[str]]:
        # Before the change the chunks were embedded after extraction: this waited in vain.
        seen.append(started.wait(timeout=5))
        return mentions(texts)

    index = ChunkIndex(uri=str(tmp_path / "m.db"), collection="t", embeddings=model)
    report = ingest([_folder(tmp_path)], index=index, options=IngestOptions(entities=waiting, progress=False))
    assert not report.failed and seen == [True]
    chunk_calls = [(thread, texts) for thread, texts in model.calls if len(texts) == len(FILES)]
    assert chunk_calls and all(thread.startswith("ingest-embed") for thread, _ in chunk_calls)


def test_the_store_holds_what_the_sequential_order_stored(tmp_path):
    """Chunk rows and entity rows as embedding the chunks after the entities gave: the same
    vectors for the same texts, entity rows naming the chunks, each chunk carrying its keys."""
    model = _model()
    index = ChunkIndex(uri=str(tmp_path / "m.db"), collection="t", embeddings=model)
    ingest([_folder(tmp_path)], index=index, options=IngestOptions(entities=mentions, progress=False))
    chunks, entities = _rows(index)
    plain = DeterministicFakeEmbedding(size=16)
    assert len(chunks) == len(FILES)
    for row in chunks.values():
        assert row["dense"] == _stored(plain.embed_query(row["text"]))
    brandt = next(r for r in chunks.values() if r["title"] == "brandt")
    assert set(brandt[ENTITIES_FIELD]) >= {"ilsa brandt", "korvik", "lunmar"}
    assert set(entities["korvik"]["chunks"]) == {
        pk for pk, r in chunks.items() if "korvik" in r[ENTITIES_FIELD]
    }
    assert entities["korvik"]["dense"] == _stored(plain.embed_query("Korvik"))


def test_a_failed_group_embedding_beside_the_extractor_falls_back_to_file_by_file(tmp_path):
    model = _model(fail_on="Osterby is busy")
    index = ChunkIndex(uri=str(tmp_path / "m.db"), collection="t", embeddings=model)
    report = ingest(
        [_folder(tmp_path)], index=index, options=IngestOptions(entities=mentions, progress=False)
    )
    assert index.count() == len(FILES)  # one text a call file by file: the model copes
    assert not report.failed
    assert any(len(texts) == len(FILES) for _, texts in model.calls)  # the group's call did fail


def test_embed_on_one_thread_runs_the_embedded_model_on_one_torch_thread_and_restores_it():
    class Probe(LocalEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[float(torch.get_num_threads())] for _ in texts]

    model = Probe.model_construct()  # no weights loaded: only the class matters
    before = torch.get_num_threads()
    assert embed_on_one_thread(model, ["a", "b"] * 40) == [[1.0]] * 80
    assert torch.get_num_threads() == before
    other = DeterministicFakeEmbedding(size=4)  # any other model: called as it is
    assert embed_on_one_thread(other, ["a"]) == other.embed_documents(["a"])


def test_a_thread_created_inside_another_threads_embedding_leaves_later_threads_on_the_configured_count(
    two_torch_threads,
):
    """Ingest's two embedding threads: the names' thread is created while the chunks' thread is
    inside its block, so its first torch call finds torch's process-wide count at 1 (its own count
    is 1), and it leaves after the chunks' thread. A save/restore per call then left that 1 as the
    count every later thread starts on: the next large batch in a new thread ran on one thread."""
    chunks_in, names_in, chunks_out = threading.Event(), threading.Event(), threading.Event()
    counts: dict[str, int] = {}
    waited: list[bool] = []

    class Probe(LocalEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            if texts == ["chunk"]:
                chunks_in.set()
                waited.append(names_in.wait(10))
            elif texts == ["name"]:
                names_in.set()
                waited.append(chunks_out.wait(10))  # the chunks' block has ended
            counts[texts[0]] = torch.get_num_threads()
            return [[0.0] for _ in texts]

    model = Probe.model_construct()

    def chunks() -> None:
        embed_on_one_thread(model, ["chunk"])
        chunks_out.set()

    def run(target) -> None:
        worker = threading.Thread(target=target)
        worker.start()
        worker.join(20)

    chunk_thread = threading.Thread(target=chunks)
    chunk_thread.start()
    waited.append(chunks_in.wait(10))
    run(lambda: embed_on_one_thread(model, ["name"]))  # created inside the chunks' block
    chunk_thread.join(20)
    run(lambda: model.embed_documents(["passage"] * (SMALL_CALL + 1)))  # a large batch, later
    assert waited == [True] * 3  # the calls did overlap as scripted
    assert counts == {"chunk": 1, "name": 1, "passage": 2}
    assert torch.get_num_threads() == 2


def test_a_group_is_written_while_the_next_group_embeds(tmp_path, monkeypatch):
    """One group behind (``pipeline._embedded``): the first file's insert waits for the second
    file's embedding to start. Written before the next group embedded (the order until round 8),
    the insert waited in vain."""
    import rag_graphs.ingestion.pipeline as pipeline

    monkeypatch.setattr(pipeline, "FIRST_GROUP", 1)
    monkeypatch.setattr(pipeline, "EMBED_GROUP", 1)  # a group per file: brandt, harbour, institute
    second = threading.Event()

    class Marking(Recording):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            if any("harbour of Osterby" in t for t in texts):
                second.set()
            return super().embed_documents(texts)

    model = Marking(size=16)
    object.__setattr__(model, "calls", [])
    waited: list[tuple[str, bool]] = []
    add = ChunkIndex.add

    def inserting(self, documents, **kwargs):
        source = Path(documents[0].metadata["source"]).name
        waited.append((source, second.wait(timeout=5) if source == "brandt.txt" else True))
        return add(self, documents, **kwargs)

    monkeypatch.setattr(ChunkIndex, "add", inserting)
    index = ChunkIndex(uri=str(tmp_path / "m.db"), collection="t", embeddings=model)
    seen: list[str] = []
    report = ingest(
        [_folder(tmp_path)],
        index=index,
        options=IngestOptions(
            entities=mentions, progress=False, on_file=lambda r: seen.append(Path(r.path).name)
        ),
    )
    assert not report.failed and index.count() == len(FILES)
    assert waited == [("brandt.txt", True), ("harbour.txt", True), ("institute.txt", True)]
    assert seen == ["brandt.txt", "harbour.txt", "institute.txt"]  # each reported once written
