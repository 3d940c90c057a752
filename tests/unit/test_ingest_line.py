"""Ingest's groups one behind the next (issue 47, round 5): a group's embedding and entity
extraction start before the group ahead of it is stored (``storing.start_group``,
``pipeline._Line``), the extractor in a thread of its own; a group sharing a source or a chunk id
with the one ahead waits for it; the store holds what storing group by group held (scripted
fakes, no timing)."""

from __future__ import annotations

import threading
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding

import rag_graphs.ingestion.pipeline as pipeline
from rag_graphs.entity_graph.rows import entity_table
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.ingestion.report import FileResult
from rag_graphs.ingestion.storing import Group, Workers, independent
from rag_graphs.store import ChunkIndex

PLACES = ("Korvik", "Lunmar", "Osterby", "Velmora", "Brandt", "Tallin", "Ostra", "Ferro")


def _folder(tmp_path: Path, count: int = 10) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir(parents=True)
    for i in range(count):
        a, b = PLACES[i % len(PLACES)], PLACES[(i + 3) % len(PLACES)]
        (folder / f"file{i:02d}.txt").write_text(
            f"Report {i}\n\nA road from {a} to {b} was built in year {i}."
        )
    return folder


def mentions(texts: list[str]) -> list[list[str]]:
    return [[p for p in PLACES if p in t] for t in texts]


def _rows(index: ChunkIndex) -> tuple[dict, dict]:
    chunks = {r["pk"]: r for batch in index.stored.iterate(["*"]) for r in batch}
    for row in chunks.values():
        row.pop("ingested_at", None)
    table = entity_table(index)
    table.load()
    return chunks, {r["pk"]: r for batch in table.iterate(["*"]) for r in batch}


def _small_groups(monkeypatch) -> None:
    monkeypatch.setattr(pipeline, "FIRST_GROUP", 2)
    monkeypatch.setattr(pipeline, "EMBED_GROUP", 4)


def test_the_next_groups_extraction_runs_before_this_group_is_inserted(tmp_path, monkeypatch):
    """The first group's insert waits for the extractor to be called on the second group: it is
    (in the ``ingest-ner`` thread). Storing group by group, the second group's extraction came
    after the first's insert, and this waited in vain."""
    _small_groups(monkeypatch)
    second = threading.Event()
    threads: list[str] = []
    seen: list[bool] = []

    def extractor(texts: list[str]) -> list[list[str]]:
        threads.append(threading.current_thread().name)
        if len(threads) == 2:
            second.set()
        return mentions(texts)

    add = ChunkIndex.add

    def inserting(self, chunks, **kwargs):
        if not seen:
            seen.append(second.wait(timeout=5))
        return add(self, chunks, **kwargs)

    monkeypatch.setattr(ChunkIndex, "add", inserting)
    index = ChunkIndex(
        uri=str(tmp_path / "m.db"), collection="t", embeddings=DeterministicFakeEmbedding(size=16)
    )
    report = ingest(
        [_folder(tmp_path)], index=index, options=IngestOptions(entities=extractor, progress=False)
    )
    assert not report.failed and len(report.files) == 10
    assert seen == [True]
    assert threads and all(t.startswith("ingest-ner") for t in threads)


def test_the_store_holds_what_storing_group_by_group_held(tmp_path, monkeypatch):
    """Chunk rows (ids, texts, fields, entities, vectors) and entity rows (names, vectors, chunk
    lists, counts) are those of an ingest where every group waits for the one ahead."""
    _small_groups(monkeypatch)
    stores = []
    for name, ahead in (("ahead", True), ("sequential", False)):
        with monkeypatch.context() as m:
            if not ahead:
                m.setattr(pipeline, "independent", lambda stored, started: False)
            index = ChunkIndex(
                uri=str(tmp_path / f"{name}.db"),
                collection="t",
                embeddings=DeterministicFakeEmbedding(size=16),
            )
            report = ingest(
                [_folder(tmp_path / name)],
                index=index,
                options=IngestOptions(entities=mentions, progress=False),
            )
            assert not report.failed and len(report.files) == 10
            stores.append(_rows(index))
    (chunks, entities), (chunks_seq, entities_seq) = stores
    assert len(chunks) == 10 and len(entities) == len(entities_seq) >= len(PLACES)  # titles count too
    strip = {"source", "chunk_id", "pk", "doc_hash"}  # the two folders' paths differ
    assert sorted((r["text"], r["dense"], sorted(r["entities"])) for r in chunks.values()) == sorted(
        (r["text"], r["dense"], sorted(r["entities"])) for r in chunks_seq.values()
    )
    assert {k for r in chunks.values() for k in r} - strip == {
        k for r in chunks_seq.values() for k in r
    } - strip
    by_text = {r["text"]: pk for pk, r in chunks.items()}
    by_text_seq = {pk: r["text"] for pk, r in chunks_seq.items()}
    for key, row in entities.items():
        other = entities_seq[key]
        assert (row["name"], row["dense"], row["n"]) == (other["name"], other["dense"], other["n"])
        assert sorted(row["chunks"]) == sorted(by_text[by_text_seq[pk]] for pk in other["chunks"])


def _group(*files: tuple[str, list[str]]) -> Group:
    return [
        (FileResult(path=source), [Document(id=i, page_content=i, metadata={"source": source}) for i in ids])
        for source, ids in files
    ]


def test_independent_groups_share_no_source_and_no_chunk_id():
    one = _group(("a.txt", ["1", "2"]), ("b.txt", ["3"]))
    assert independent(one, _group(("c.txt", ["4"])))
    assert not independent(one, _group(("b.txt", ["9"])))  # a new version of b.txt
    assert not independent(one, _group(("c.txt", ["3"])))  # a chunk id of the group ahead


def test_a_group_that_depends_on_the_one_ahead_is_started_after_it_is_stored(monkeypatch):
    """Order of starts and stores: g2 starts before g1 is stored; g3 shares a source with g2, so
    g2 is stored before g3 starts; the end stores g3. Results come back in file order."""
    events: list[str] = []
    names = {}

    def start(index, group, extractor, workers):
        events.append(f"start {names[id(group)]}")
        return names[id(group)]

    def stored(index, group, extractor, records, digests, started, workers):
        events.append(f"store {names[id(group)]} ({started})")
        return [r for r, _ in group]

    monkeypatch.setattr(pipeline, "start_group", start)
    monkeypatch.setattr(pipeline, "_stored", stored)
    g1, g2, g3 = _group(("a.txt", ["1"])), _group(("b.txt", ["2"])), _group(("b.txt", ["3"]))
    names.update({id(g1): "g1", id(g2): "g2", id(g3): "g3"})
    with Workers() as workers:
        line = pipeline._Line(None, mentions, None, {}, workers)  # type: ignore[arg-type]
        results = [r.path for g in (g1, g2, g3, []) for r in line.add(g)]
    assert events == ["start g1", "start g2", "store g1 (g1)", "store g2 (g2)", "start g3", "store g3 (g3)"]
    assert results == ["a.txt", "b.txt", "b.txt"]


def test_without_an_extractor_each_group_is_stored_at_once(monkeypatch):
    events: list[int] = []
    monkeypatch.setattr(
        pipeline, "_stored", lambda index, group, *rest: events.append(len(group)) or [r for r, _ in group]
    )
    with Workers() as workers:
        line = pipeline._Line(None, None, None, {}, workers)  # type: ignore[arg-type]
        assert [r.path for r in line.add(_group(("a.txt", ["1"]), ("b.txt", ["2"])))] == ["a.txt", "b.txt"]
        assert events == [2]
        assert line.add([]) == [] and events == [2]
