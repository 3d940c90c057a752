"""A changed file's replacement on a Milvus server, its writer killed with ``kill -9`` (issue 40,
item 11): searches see one version of the file before the kill, after it, while another process
ingests, and after the file is stored again (``rag_graphs.store.replacing``).

The server is milvus-lite serving a data folder over loopback gRPC (the ``server_uri`` fixture):
no file lock, several processes write and read at once. The writer (``tests/crash_worker.py
ingest``) hangs after the changed file's new chunks are inserted, before they are committed or
after (before the old ones are deleted), and is killed there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.store import ChunkIndex
from rag_graphs.store.filters import quote
from rag_graphs.store.replacing import hidden_filter, pending
from tests import crash_worker as worker
from tests.unit import test_crash_resume as crash

COLLECTION = worker.COLLECTION


def _versions(index: ChunkIndex, source: str) -> set[str]:
    """The doc_hash of every stored row of ``source``, whatever searches are shown (raw rows)."""
    rows = index.client.query(
        index.collection, filter=f"source == {quote(source)}", output_fields=["doc_hash"]
    )
    return {r["doc_hash"] for r in rows}


def _seen(index: ChunkIndex, source: str) -> set[str]:
    """The doc_hash of the rows of ``source`` a reader gets: by filter and by hybrid search."""
    found = index.where(f"source == {quote(source)}", limit=100)
    hits = [d for d, _ in index.search("Who is the keeper of harbour 0?", k=20)]
    assert any(d.metadata["source"] == source for d in hits)
    return {d.metadata["doc_hash"] for d in found + hits if d.metadata["source"] == source}


def _ingest_elsewhere(tmp_path: Path, server_uri: str) -> None:
    """Another process ingests another folder into the collection, to its end."""
    others = tmp_path / "others"
    crash._write_notes(others, 3)
    progress, output = tmp_path / "other.jsonl", tmp_path / "other.out"
    args = ("ingest", "--folder", others, "--store", server_uri, "--progress", progress, "--group", 4)
    other = crash._start(output, *args)
    try:
        assert other.wait(timeout=crash.WAIT_SECONDS) == 0, crash._tail(output)
    finally:
        crash._stop(other)
    assert any(r["event"] == "done" for r in crash._jsonl(progress))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("step", ["commit", "remove_stale"])
def test_a_writer_killed_mid_replace_on_a_server_never_serves_both_versions(
    tmp_path: Path, server_uri: str, step: str
) -> None:
    files = crash._write_notes(tmp_path / "notes", 4)
    reader = ChunkIndex(uri=server_uri, collection=COLLECTION, embeddings=worker.embeddings())
    ingest([tmp_path / "notes"], index=reader, options=IngestOptions(progress=False))
    changed, source = files[0], str(files[0].resolve())
    (old,) = _versions(reader, source)
    changed.write_text("# Note 0\n\nHarbour 0 ships basalt now.\n\n## Detail 0\n\nThe keeper is Brita.\n")

    progress = tmp_path / "progress.jsonl"
    args = ("ingest", "--folder", tmp_path / "notes", "--store", server_uri, "--progress", progress)
    output = tmp_path / "victim.out"
    victim = crash._start(output, *args, "--group", 4, "--hang-in", step)
    try:
        crash._wait_until(
            lambda: any(r["event"] == "hang" for r in crash._jsonl(progress)), victim, step, output
        )
        stored = _versions(reader, source)
        assert len(stored) == 2 and old in stored  # the crash point: both versions stored
        (new,) = stored - {old}
        shown = old if step == "commit" else new  # committed: the new version serves
        assert _seen(reader, source) == {shown}  # a reader open all along, while the writer hangs
        crash._kill9(victim)
    finally:
        crash._stop(victim)
    assert _seen(reader, source) == {shown}  # after the kill, before anyone repairs anything

    _ingest_elsewhere(tmp_path, server_uri)  # another process opens the collection and ingests
    assert _seen(reader, source) == {shown}
    properties = reader.client.describe_collection(COLLECTION).get("properties")
    if step == "remove_stale":  # the other writer finished the committed replacement
        assert _versions(reader, source) == {new} and not pending(properties)
    else:  # an uncommitted one cannot be told from a live writer's: it stays, its version hidden
        assert _versions(reader, source) == {old, new} and hidden_filter(properties)

    report = ingest([tmp_path / "notes"], index=reader, options=IngestOptions(progress=False))
    assert not report.failed, report.summary()
    assert _versions(reader, source) == _seen(reader, source) == {new}
    assert not pending(reader.client.describe_collection(COLLECTION).get("properties"))
    texts = [d.page_content for d in reader.where(f"source == {quote(source)}", limit=100)]
    assert any("Brita" in t for t in texts) and not any("Ansel0" in t for t in texts)


def test_the_filter_shows_one_version_of_each_file_being_replaced() -> None:
    import json

    def record(state: str, versions: dict[str, str]) -> str:
        return json.dumps({"state": state, "versions": versions})

    properties = {
        "rag_graphs.replacing.a": record("inserting", {"/d/x.md": "new", '/d/"y".md': "y2"}),
        "rag_graphs.replacing.b": record("committed", {"/d/x.md": "new"}),  # supersedes a's x
        "rag_graphs.replacing.c": "{not json",  # damaged: no record
        "rag_graphs.version": "v1",
    }
    assert set(pending(properties)) == {"rag_graphs.replacing.a", "rag_graphs.replacing.b"}
    assert hidden_filter(properties) == (
        'not ((source == "/d/x.md" and doc_hash != "new") or '
        '(source == "/d/\\"y\\".md" and doc_hash in ["y2"]))'
    )
    assert hidden_filter({"rag_graphs.version": "v1"}) is None and hidden_filter(None) is None
