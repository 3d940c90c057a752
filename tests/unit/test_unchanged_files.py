"""Re-ingest skips unchanged files before conversion (issue 29, item 6): counted at the converter."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from langchain_core.documents import Document

import rag_graphs.ingestion.pipeline as pipeline
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.store.files import files_collection


@pytest.fixture
def conversions(monkeypatch) -> list[str]:
    """Every file the pipeline hands to the converter, by name."""
    seen: list[str] = []
    real = pipeline.convert

    def counting(path, *args, **kwargs):
        seen.append(Path(path).name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(pipeline, "convert", counting)
    return seen


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(4):
        (docs / f"f{i}.md").write_text(f"# File {i}\n\nParagraph {i} says the river number {i} is wide.\n")
    return docs


def _ingest(paths, index, **kw):
    return ingest(paths, index=index, options=IngestOptions(progress=False, **kw))


def _stored(index) -> dict[str, str]:
    return {d.id: d.metadata["source"] for d, _ in index.iter_chunks()}


def test_unchanged_files_are_not_converted_again(folder, index, conversions):
    first = _ingest([folder], index)
    assert len(conversions) == 4 and not first.unchanged
    before = _stored(index)
    index.client.release_collection(files_collection(index.collection))  # as a new process finds it
    conversions.clear()
    again = _ingest([folder], index)
    assert conversions == []
    assert len(again.unchanged) == 4 and again.added == 0 and again.chunks == first.chunks
    assert again.kinds == first.kinds and _stored(index) == before
    assert "4 file(s) ingested" in again.summary() and "4 unchanged (not converted)" in again.summary()


def test_one_edited_file_is_the_one_converted(folder, index, conversions):
    _ingest([folder], index)
    (folder / "f2.md").write_text("# File 2\n\nThe edited paragraph says the lake is deep.\n")
    conversions.clear()
    report = _ingest([folder], index)
    assert conversions == ["f2.md"]
    edited = next(f for f in report.files if f.path.endswith("f2.md"))
    assert not edited.unchanged and edited.added >= 1 and edited.removed_stale >= 1
    texts = [d.page_content for d, _ in index.iter_chunks()]
    assert any("lake" in t for t in texts) and not any("river number 2" in t for t in texts)
    conversions.clear()
    _ingest([folder], index)
    assert conversions == []  # the edited file is recorded in its turn


def test_a_changed_option_or_force_converts_every_file(folder, index, conversions):
    _ingest([folder], index)
    conversions.clear()
    relabelled = _ingest([folder], index, tenant="acme")  # labels shape chunks: all replaced
    assert len(conversions) == 4 and not relabelled.unchanged
    assert {d.metadata.get("tenant") for d, _ in index.iter_chunks()} == {"acme"}
    conversions.clear()
    _ingest([folder], index, tenant="acme", caption_prompt="chart")  # a captioning setting
    assert len(conversions) == 4
    conversions.clear()
    forced = _ingest([folder], index, tenant="acme", caption_prompt="chart", force=True)
    assert len(conversions) == 4 and forced.added == 0 and not forced.unchanged


def test_a_removed_or_deleted_file_loses_its_chunks_and_is_converted_when_back(folder, index, conversions):
    _ingest([folder], index)
    gone = str((folder / "f1.md").resolve())
    assert index.delete_source(gone) > 0
    assert gone not in set(_stored(index).values())
    conversions.clear()
    _ingest([folder], index)
    assert conversions == ["f1.md"]  # its record went with its chunks
    assert gone in set(_stored(index).values())


def test_a_record_is_checked_against_the_chunks_not_trusted(folder, index, conversions):
    _ingest([folder], index)
    source = str((folder / "f3.md").resolve())
    ids = [d.id for d, _ in index.iter_chunks() if d.metadata["source"] == source]
    index.delete_ids(ids[:1])  # a chunk lost behind the record's back (a kill, a Milvus tool)
    assert index.client.has_collection(files_collection(index.collection))  # the record is there
    conversions.clear()
    report = _ingest([folder], index)
    assert conversions == ["f3.md"] and report.added == 1


def test_the_cli_reports_unchanged_files_and_force_converts_them(folder, tmp_path, conversions):
    from typer.testing import CliRunner

    from rag_graphs.cli import app

    args = ["ingest", str(folder), "--store", str(tmp_path / "cli.db")]
    assert CliRunner().invoke(app, args).exit_code == 0 and len(conversions) == 4
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and len(conversions) == 4
    assert "4 unchanged (not converted)" in again.output and "0 new" in again.output
    forced = CliRunner().invoke(app, [*args, "--force"])
    assert forced.exit_code == 0 and len(conversions) == 8 and "0 unchanged" in forced.output


def _count_queries(index, monkeypatch) -> Counter:
    """Every ``query`` the index's Milvus client is sent, by collection."""
    calls: Counter = Counter()
    real = index.client.query

    def counting(collection_name, *args, **kwargs):
        calls[collection_name] += 1
        return real(collection_name, *args, **kwargs)

    monkeypatch.setattr(index.client, "query", counting)
    return calls


def _notes(folder: Path, count: int) -> Path:
    folder.mkdir()
    for i in range(count):
        (folder / f"n{i:03d}.txt").write_text(f"Note {i}: the survey boat {i} reached harbour {i}.\n")
    return folder


def test_re_ingest_reads_the_store_once_per_batch_not_once_per_file(tmp_path, index, monkeypatch):
    """Issue 41 item 2: one query per unchanged file, each reading every row, was quadratic.
    N and 2N unchanged files now cost the same queries (one batch), none per file."""
    queries = {}
    for count in (6, 12):
        folder = _notes(tmp_path / f"notes{count}", count)
        _ingest([folder], index)
        calls = _count_queries(index, monkeypatch)
        report = _ingest([folder], index)
        assert len(report.unchanged) == count and report.added == 0
        queries[count] = dict(calls)
        monkeypatch.undo()
    assert queries[6] == queries[12], queries
    assert queries[12][files_collection(index.collection)] == 1  # the records, read once


def test_a_batch_with_an_old_version_left_converts_only_that_file(folder, index, conversions):
    """Extra rows of one file in a batch cut the batch's read at its limit: the files are then
    told apart one by one, and only the file with a stale version beside its own is converted."""
    _ingest([folder], index)
    source = str((folder / "f1.md").resolve())
    doc, vector = next((d, v) for d, v in index.iter_chunks() if d.metadata["source"] == source)
    stale = dict(doc.metadata, doc_hash="an-older-version", chunk_id="stale-row")
    index.add([Document(page_content="an older paragraph", metadata=stale, id="stale-row")], [vector])
    conversions.clear()
    report = _ingest([folder], index)
    assert conversions == ["f1.md"] and len(report.unchanged) == 3
    assert "an older paragraph" not in [d.page_content for d, _ in index.iter_chunks()]
