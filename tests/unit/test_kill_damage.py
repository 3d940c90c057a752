"""A process killed inside an ingest leaves no lasting damage (issue 30, part B).

Each test stops an ingest at one point between two writes (an exception raised
there: what is stored at that moment is what a ``kill -9`` leaves) and checks
what the store holds afterwards, or after the next ingest or ``graph build``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.documents import Document

from rag_graphs.entity_graph.build import build_graph
from rag_graphs.entity_graph.rows import CHUNKS_FIELD, entity_collection, entity_rows
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.store import ChunkIndex
from rag_graphs.store.fields import ENTITIES_FIELD, PRIMARY_FIELD
from rag_graphs.store.index import file_batches


class Killed(BaseException):
    """Stands for ``kill -9``: nothing after it runs, and no ``except Exception`` catches it."""


def capitalised(texts: list[str]) -> list[list[str]]:
    """A fake entity extractor: the capitalised words."""
    return [[w.strip(".,") for w in t.split() if w[:1].isupper()] for t in texts]


def _write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


FILES = {
    "a.md": "# Velmora\n\nThe Velmora Institute was founded by Ilsa Brandt.",
    "b.md": "# Brandt\n\nIlsa Brandt was born in Korvik.",
}


def _unrecorded(index: ChunkIndex) -> list[tuple[str, str]]:
    """(chunk id, entity key) pairs of stored chunks that the entity collection does not list."""
    rows = index.client.query(index.collection, filter="", output_fields=[PRIMARY_FIELD, ENTITIES_FIELD])
    assert rows and all(r.get(ENTITIES_FIELD) for r in rows)
    keys = [k for r in rows for k in r[ENTITIES_FIELD]]
    listed = entity_rows(index, keys, [CHUNKS_FIELD])
    return [
        (r[PRIMARY_FIELD], k)
        for r in rows
        for k in r[ENTITIES_FIELD]
        if k not in listed or r[PRIMARY_FIELD] not in listed[k][CHUNKS_FIELD]
    ]


@pytest.mark.parametrize(
    "where", ["rag_graphs.ingestion.storing.add_entities", "rag_graphs.store.index.ChunkIndex.add"]
)
def test_a_kill_between_chunk_rows_and_entity_rows_leaves_no_edge_missing(
    tmp_path, index, monkeypatch, where
):
    folder = _write(tmp_path / "docs", FILES)

    def killed(*args, **kwargs):
        raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(where, killed)
        with pytest.raises(Killed):
            ingest(
                [folder],
                index=index,
                options=IngestOptions(entities=capitalised, progress=False, timeout=None),
            )
    ingest(
        [folder], index=index, options=IngestOptions(entities=capitalised, progress=False, timeout=None)
    )  # the next ingest
    assert index.count() == 2
    assert _unrecorded(index) == []


def test_graph_build_re_records_chunks_whose_entity_rows_are_missing(tmp_path, index):
    """A store damaged by an older version: chunks carry ``entities`` the entity collection lacks."""
    ingest(
        [_write(tmp_path / "docs", FILES)],
        index=index,
        options=IngestOptions(entities=capitalised, progress=False, timeout=None),
    )
    name = entity_collection(index.collection)
    keys = [r[PRIMARY_FIELD] for r in index.client.query(name, filter="", output_fields=[PRIMARY_FIELD])]
    index.client.delete(name, ids=keys)
    damaged = _unrecorded(index)
    assert damaged
    # a plain build (ingest's, the evaluator's) never reads the whole store to look for damage
    assert build_graph(index, capitalised, progress=False).repaired == 0
    assert _unrecorded(index) == damaged
    report = build_graph(index, capitalised, progress=False, repair=True)  # graph build --repair
    assert _unrecorded(index) == []
    assert report.repaired == 2 and report.annotated == 0
    assert build_graph(index, capitalised, progress=False, repair=True).repaired == 0  # nothing left


def _chunks(source: str, n: int) -> list[Document]:
    return [
        Document(
            page_content=f"{source} part {i}",
            metadata={"chunk_id": f"{source}-{i}", "source": source, "doc_hash": "h", "kind": "text"},
        )
        for i in range(n)
    ]


def test_insert_batches_never_split_a_file_that_fits_in_one(index, monkeypatch):
    """A kill between two insert batches leaves a file part-stored only when it alone exceeds a
    batch: a 100-chunk file after a 200-chunk one used to be split 56 + 44."""
    chunks = _chunks("big", 200) + _chunks("small", 100) + _chunks("huge", 600) + _chunks("tail", 3)
    batches: list[list[str]] = []
    original = index.store.add_documents

    def recording(documents, **kwargs):
        batches.append([d.metadata["source"] for d in documents])
        return original(documents, **kwargs)

    monkeypatch.setattr(index.store, "add_documents", recording)
    assert index.add(chunks) == 903
    assert all(len(b) <= 256 for b in batches)
    for source in ("big", "small", "tail"):
        assert sum(source in b for b in batches) == 1, (source, [sorted(set(b)) for b in batches])
    assert [len(b) for b in batches if "huge" in b] == [256, 256, 88]
    assert all(set(b) == {"huge"} for b in batches if "huge" in b)
    assert file_batches(_chunks("x", 3), 256) == [(0, 3)] and file_batches([], 256) == []


def _kill_a_replace(tmp_path: Path, index: ChunkIndex, monkeypatch, where: str) -> Path:
    """Ingest a one-chunk file (keeper Ansel), change it (keeper Brita) and ingest it again, killed
    at ``where``, after the new version's insert; the folder."""
    folder = _write(tmp_path / "docs", {"a.md": "# Harbour\n\nThe keeper is Ansel."})
    ingest([folder], index=index, options=IngestOptions(progress=False, timeout=None))
    (folder / "a.md").write_text("# Harbour\n\nThe keeper is Brita.")

    def killed(*args, **kwargs):
        raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(where, killed)
        with pytest.raises(Killed):
            ingest([folder], index=index, options=IngestOptions(progress=False, timeout=None))
    return folder


def test_a_kill_between_new_version_and_old_delete_never_serves_both(
    tmp_path, index, fake_embeddings, monkeypatch
):
    folder = _kill_a_replace(tmp_path, index, monkeypatch, "rag_graphs.ingestion.storing._remove_stale")
    hashes = {
        r["doc_hash"] for r in index.client.query(index.collection, filter="", output_fields=["doc_hash"])
    }
    assert len(hashes) == 2  # the crash point: both versions stored

    reader = ChunkIndex(
        uri=index.uri, collection=index.collection, embeddings=fake_embeddings
    )  # next process
    texts = [d.page_content for d, _ in reader.search("Who is the keeper?", k=10)]
    assert any("Brita" in t for t in texts) and not any("Ansel" in t for t in texts)
    ingest([folder], index=reader, options=IngestOptions(progress=False, timeout=None))
    assert reader.count() == 1


@pytest.mark.parametrize("flags, repair", [([], False), (["--repair"], True)])
def test_graph_build_repairs_only_when_asked(tmp_path, monkeypatch, flags, repair):
    """The repair pass reads the whole store: ``rag-graphs graph build`` runs it on ``--repair`` only."""
    from typer.testing import CliRunner

    from rag_graphs import cli
    from rag_graphs.entity_graph import build as graph_build
    from rag_graphs.entity_graph.build import GraphBuildReport

    asked: list[bool] = []

    def recorded(index, extractor, **kwargs):
        asked.append(kwargs.get("repair", False))
        return GraphBuildReport(chunks=1)

    monkeypatch.setattr(graph_build, "build_graph", recorded)
    monkeypatch.setattr("rag_graphs.entity_graph.entities.load_extractor", lambda *a, **k: capitalised)
    monkeypatch.setattr("rag_graphs.search.retrieval.index_for", lambda ctx: None)
    store = str(tmp_path / "cli.db")
    result = CliRunner().invoke(cli.app, ["graph", "build", "--store", store, *flags])
    assert result.exit_code == 0, result.output
    assert asked == [repair]


def test_a_kill_before_the_commit_on_a_lite_path_rolls_the_new_version_back(
    tmp_path, index, fake_embeddings, monkeypatch
):
    """Killed after the new chunks are inserted, before their commit: the next process to open the
    path (it holds it alone) deletes the uncommitted version, and the old one serves until then."""
    folder = _kill_a_replace(tmp_path, index, monkeypatch, "rag_graphs.store.replacing.Replacement.commit")
    texts = {r["text"] for r in index.client.query(index.collection, filter="", output_fields=["text"])}
    assert any("Brita" in t for t in texts) and any("Ansel" in t for t in texts)  # both stored

    reader = ChunkIndex(uri=index.uri, collection=index.collection, embeddings=fake_embeddings)
    stored = [r["text"] for r in reader.client.query(reader.collection, filter="", output_fields=["text"])]
    assert len(stored) == 1 and "Ansel" in stored[0]  # rolled back at open: the old version serves
    ingest([folder], index=reader, options=IngestOptions(progress=False, timeout=None))
    assert [d.page_content for d, _ in reader.search("Who is the keeper?", k=10)] == [
        r["text"] for r in reader.client.query(reader.collection, filter="", output_fields=["text"])
    ]
    assert reader.count() == 1 and "Brita" in reader.where("", limit=10)[0].page_content
