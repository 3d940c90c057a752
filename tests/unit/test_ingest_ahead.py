"""Ingest's overlap, round 3 (issue 47): files are converted ahead by a budget of chunks while the
main thread stores a group (``rag_graphs.ingestion.ahead``), the first group is small, and new
entity names are embedded in pieces by two threads at once; what is stored is unchanged
(scripted fakes, no timing)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import ClassVar

import numpy
from langchain_core.embeddings import DeterministicFakeEmbedding

import rag_graphs.ingestion.pipeline as pipeline
import rag_graphs.ingestion.storing as storing
from rag_graphs.entity_graph.rows import entity_table
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.ingestion.ahead import ahead
from rag_graphs.store import ChunkIndex
from rag_graphs.store.fields import ENTITIES_FIELD

PLACES = ("Korvik", "Lunmar", "Osterby", "Velmora", "Brandt", "Tallin", "Ostra", "Ferro")


def test_files_are_converted_ahead_while_the_consumer_holds_one_within_the_budget():
    """The consumer takes one file and then waits (as the main thread does while it stores a
    group): conversion goes on past ``least`` files up to the budget of converted chunks, never
    beyond it, and every file comes out once, in order."""
    files = [Path(f"f{i}.txt") for i in range(40)]
    converted: list[Path] = []
    waiting: list[int] = []  # converted chunks not taken yet, when each conversion starts
    taken: list[Path] = []
    enough = threading.Event()

    def prepare(path: Path) -> list[str]:
        waiting.append(len(converted) - len(taken))
        converted.append(path)
        if len(converted) >= 11:
            enough.set()
        return ["chunk"]

    held = False
    for path, future in ahead(files, prepare, len, budget=10, least=2):
        future.result()
        taken.append(path)
        if not held:
            held = True
            # the consumer asks for nothing while it waits: before the change 2 files were ahead
            assert enough.wait(10)
    assert taken == files
    assert max(waiting) <= 10


def test_a_failed_conversion_is_the_files_own_and_the_others_go_on():
    def prepare(path: Path) -> list[str]:
        if path.name == "bad.txt":
            raise ValueError("cannot read bad.txt")
        return ["a", "b"]

    files = [Path("a.txt"), Path("bad.txt"), Path("c.txt")]
    out = [(p, f.exception()) for p, f in ahead(files, prepare, len, budget=1, least=1)]
    assert [p for p, _ in out] == files
    assert [str(e) if e else None for _, e in out] == [None, "cannot read bad.txt", None]


def test_a_consumer_faster_than_the_conversion_callbacks_gets_every_file(monkeypatch):
    """The consumer holds a file's result and asks for the next before the pool has run that
    conversion's ``_done`` callback (``Future.result`` returns first): every file still comes
    out. Before the fix ``take`` found none pending with one "running" and ended the ingest
    there (70 of 1,000 files once NER left the main thread)."""
    from rag_graphs.ingestion import ahead as ahead_module

    asked = threading.Event()
    take, done = ahead_module._Window.take, ahead_module._Window._done

    def taking(self):
        asked.set()
        return take(self)

    def late(self, future):
        asked.wait(2)  # the callback runs only once the consumer has asked for the next file
        asked.clear()
        done(self, future)

    monkeypatch.setattr(ahead_module._Window, "take", taking)
    monkeypatch.setattr(ahead_module._Window, "_done", late)
    files = [Path(f"f{i}.txt") for i in range(6)]
    got = [
        (path, future.result()) for path, future in ahead(files, lambda p: [p.name], len, least=1, budget=1)
    ]
    assert [p for p, _ in got] == files
    assert [c for _, c in got] == [[p.name] for p in files]


class Names(DeterministicFakeEmbedding):
    """Scripted embeddings: a call of short texts (names) waits until another such call has
    started, so two name pieces must run at once for both to return quickly; records calls."""

    calls: ClassVar[list] = []
    both: ClassVar[threading.Event | None] = None
    started: ClassVar[list] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append((threading.current_thread().name, list(texts)))
        if self.both is not None and all(len(t) < 20 for t in texts):
            self.started.append(threading.current_thread().name)
            if len(self.started) >= 2:
                self.both.set()
            self.both.wait(5)
        return super().embed_documents(texts)


def _names_model() -> Names:
    model = Names(size=16)
    object.__setattr__(model, "calls", [])
    object.__setattr__(model, "started", [])
    object.__setattr__(model, "both", threading.Event())
    return model


def _folder(tmp_path: Path, count: int) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(count):
        a, b = PLACES[i % len(PLACES)], PLACES[(i + 3) % len(PLACES)]
        (folder / f"file{i:02d}.txt").write_text(
            f"Report {i}\n\nA road from {a} to {b} was built in year {i}."
        )
    return folder


def mentions(texts: list[str]) -> list[list[str]]:
    return [[p for p in PLACES if p in t] for t in texts]


def test_the_first_group_is_small_and_names_are_embedded_by_two_threads_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "FIRST_GROUP", 2)
    monkeypatch.setattr(pipeline, "EMBED_GROUP", 4)
    monkeypatch.setattr(storing, "NAME_PIECE", 2)
    sizes: list[int] = []

    def extractor(texts: list[str]) -> list[list[str]]:
        sizes.append(len(texts))
        return mentions(texts)

    model = _names_model()
    index = ChunkIndex(uri=str(tmp_path / "m.db"), collection="t", embeddings=model)
    report = ingest(
        [_folder(tmp_path, 10)], index=index, options=IngestOptions(entities=extractor, progress=False)
    )
    assert not report.failed
    assert sizes == [2, 4, 4]  # one chunk a file: groups of 2 (the first), then 4
    assert model.both.is_set()  # two name pieces ran at once (each waited for the other)
    name_threads = {thread for thread, texts in model.calls if all(len(t) < 20 for t in texts)}
    assert "MainThread" in name_threads and any(t.startswith("ingest-embed") for t in name_threads)

    # the store holds what one call per text gives: pieces change no vector, name or list
    plain = DeterministicFakeEmbedding(size=16)
    chunks = {r["pk"]: r for batch in index.stored.iterate(["*"]) for r in batch}
    table = entity_table(index)
    table.load()
    entities = {r["pk"]: r for batch in table.iterate(["*"]) for r in batch}
    assert len(chunks) == 10
    for row in chunks.values():
        assert row["dense"] == numpy.asarray(plain.embed_query(row["text"]), dtype=numpy.float32).tolist()
    assert {row["name"] for row in entities.values()} >= set(PLACES)
    for row in entities.values():
        assert row["dense"] == numpy.asarray(plain.embed_query(row["name"]), dtype=numpy.float32).tolist()
        assert set(row["chunks"]) == {pk for pk, c in chunks.items() if row["pk"] in c[ENTITIES_FIELD]}
