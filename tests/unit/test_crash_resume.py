"""Crash and resume with real processes killed by ``kill -9`` (victims: ``tests/crash_worker.py``).

A ``fixed_step`` run checkpointed in SQLite and killed inside its third model call resumes on the
same ``thread_id`` from the step after its last checkpoint, and ends as an uninterrupted run
does. An ingest killed part-way and run again leaves every chunk stored exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.store import ChunkIndex
from rag_graphs.store.fields import PRIMARY_FIELD
from tests import crash_worker as worker

ROOT = Path(__file__).resolve().parents[2]
WAIT_SECONDS = 120.0
CONTRACT = {"answer", "citations", "documents", "steps", "usage"}
STEPS = ["first_query", "intermediate", "next_query", "intermediate", "generate"]
"""The model calls of one ``fixed_step`` run with 2 hops, in order."""


def _start(output: Path, *args: str | int | Path) -> subprocess.Popen:
    """Start the worker with ``args``; its stdout and stderr go to ``output``."""
    with open(output, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.crash_worker", *map(str, args)],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _tail(output: Path) -> str:
    return output.read_text(errors="replace")[-3000:] if output.exists() else ""


def _stop(proc: subprocess.Popen) -> None:
    """Kill ``proc`` if it still runs (the ``finally`` of every test)."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)


def _kill9(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL


def _wait_until(ready: Callable[[], bool], proc: subprocess.Popen, what: str, output: Path) -> None:
    """Poll ``ready`` until it holds; fail when ``proc`` exits first or the deadline passes."""
    deadline = time.monotonic() + WAIT_SECONDS
    while not ready():
        if proc.poll() is not None:
            pytest.fail(f"worker exited ({proc.returncode}) before {what}:\n{_tail(output)}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} after {WAIT_SECONDS:.0f}s")
        time.sleep(0.1)


def start_until_hang(tmp_path: Path, common: tuple, hang_at: int, log: Path) -> tuple[subprocess.Popen, Path]:
    """Start the worker with ``common`` arguments hanging in model call ``hang_at`` and wait until
    it hangs there (``log``); the process and its output file. The caller kills it."""
    output = tmp_path / "victim.out"
    victim = _start(output, *common, "--out", tmp_path / "victim.json", "--hang-at", hang_at)
    try:
        _wait_until(lambda: any(r["event"] == "hang" for r in _jsonl(log)), victim, "hang", output)
    except BaseException:
        _stop(victim)
        raise
    return victim, output


def resume_in_another_process(tmp_path: Path, common: tuple) -> tuple[subprocess.Popen, dict]:
    """Run the worker with ``common`` arguments and ``--resume`` to its end: the process and its
    result (``--out``); fails with its output when it does not exit cleanly."""
    output = tmp_path / "resumer.out"
    resumer = _start(output, *common, "--out", tmp_path / "resumed.json", "--resume")
    try:
        assert resumer.wait(timeout=WAIT_SECONDS) == 0, _tail(output)
    finally:
        _stop(resumer)
    return resumer, json.loads((tmp_path / "resumed.json").read_text())


def _jsonl(path: Path) -> list[dict]:
    """The complete JSON lines of ``path`` (none when it does not exist yet)."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # a line being written
            break
    return rows


def _checkpoint_steps(db: Path, thread: str) -> list[int]:
    """The ``step`` of every checkpoint saved for ``thread``, read while the worker writes."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            rows = conn.execute("SELECT metadata FROM checkpoints WHERE thread_id = ?", (thread,)).fetchall()
    except sqlite3.OperationalError:  # not created yet
        return []
    return sorted(json.loads(metadata)["step"] for (metadata,) in rows)


def _next_nodes(db: Path, thread: str) -> tuple[str, ...]:
    """The nodes the latest checkpoint of ``thread`` would run next."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from rag_graphs.methods import get_graph

    with SqliteSaver.from_conn_string(str(db)) as saver:
        return (
            get_graph("fixed_step", checkpointer=saver)
            .get_state({"configurable": {"thread_id": thread}})
            .next
        )


@pytest.mark.timeout(240)
def test_a_killed_graph_run_resumes_after_its_last_checkpoint(tmp_path: Path) -> None:
    store, db, log = tmp_path / "crash.db", tmp_path / "checkpoints.sqlite", tmp_path / "calls.jsonl"
    common = ("graph", "--store", store, "--db", db, "--thread", "crashed", "--log", log)
    output = tmp_path / "victim.out"
    victim = _start(output, *common, "--out", tmp_path / "victim.json", "--hang-at", 3)
    try:
        _wait_until(lambda: any(r["event"] == "hang" for r in _jsonl(log)), victim, "3rd model call", output)
        # The step before the hanging one (intermediate = step 4, after begin) is saved; durability
        # "async" writes it in the background, so wait for it rather than assume it.
        _wait_until(lambda: 4 in _checkpoint_steps(db, "crashed"), victim, "checkpoint of step 4", output)
        _kill9(victim)
    finally:
        _stop(victim)
    killed = _jsonl(log)
    assert [(r["step"], r["event"]) for r in killed] == [
        ("first_query", "call"),
        ("intermediate", "call"),
        ("next_query", "hang"),
    ]
    assert {r["pid"] for r in killed} == {victim.pid} and not (tmp_path / "victim.json").exists()
    assert max(_checkpoint_steps(db, "crashed")) == 4
    assert _next_nodes(db, "crashed") == ("next_query",)  # the last completed step was intermediate

    resumer, resumed = resume_in_another_process(tmp_path, common)
    after = _jsonl(log)[len(killed) :]
    # The resumed process started at the step after the last checkpoint: no call before the kill ran again.
    assert [(r["pid"], r["step"], r["event"]) for r in after] == [
        (resumer.pid, step, "call") for step in STEPS[2:]
    ]
    assert [r["step"] for r in killed + after if r["event"] == "call"] == STEPS

    reference_log = tmp_path / "reference.jsonl"
    reference = worker.run_graph(
        str(tmp_path / "reference.db"), str(tmp_path / "reference.sqlite"), "reference", str(reference_log)
    )
    assert [r["step"] for r in _jsonl(reference_log)] == STEPS
    assert set(resumed["keys"]) >= CONTRACT and resumed["pending"] == []
    assert resumed["answer"] == reference["answer"] == worker.REPLIES["generate"]
    assert resumed["steps"] == reference["steps"]
    assert [s["node"] for s in resumed["steps"]] == [
        "first_query",
        "retrieve",
        "intermediate",
        "next_query",
        "retrieve",
        "intermediate",
        "generate",
    ]
    assert resumed["citations"] == reference["citations"] and resumed["citations"]
    assert resumed["documents"] == reference["documents"]
    assert {d["type"] for d in resumed["documents"]} == {"Document"}  # restored from SQLite as Documents
    assert resumed["usage"] == reference["usage"]
    assert resumed["usage"]["llm_calls"] == 5 and resumed["usage"]["retrievals"] == 2  # none counted twice


def _write_notes(folder: Path, n: int) -> list[Path]:
    """``n`` small Markdown files of two sections each (two chunks each)."""
    folder.mkdir()
    paths = []
    for i in range(n):
        path = folder / f"note_{i:02d}.md"
        path.write_text(
            f"# Note {i}\n\nHarbour {i} ships granite number {i * 7} to the north.\n\n"
            f"## Detail {i}\n\nThe keeper of harbour {i} is called Ansel{i}.\n"
        )
        paths.append(path)
    return paths


def _rows(index: ChunkIndex) -> list[tuple[str, str, str]]:
    """``(chunk id, source, doc_hash)`` of every stored row, duplicates included."""
    iterator = index.client.query_iterator(
        index.collection, batch_size=1000, filter="", output_fields=[PRIMARY_FIELD, "source", "doc_hash"]
    )
    rows = []
    try:
        while batch := iterator.next():
            rows += [(r[PRIMARY_FIELD], r["source"], r["doc_hash"]) for r in batch]
    finally:
        iterator.close()
    return rows


@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    "hang",
    [("--hang-at", 4), ("--hang-after-file", 5)],
    ids=["while-embedding-a-group", "between-files-of-a-group"],
)
def test_a_killed_ingest_run_again_stores_every_chunk_exactly_once(
    tmp_path: Path, hang: tuple[str, int]
) -> None:
    files = _write_notes(tmp_path / "notes", 30)
    folder, store, progress = tmp_path / "notes", tmp_path / "crash.db", tmp_path / "progress.jsonl"
    # 4 chunks (2 files) per embedding call: the 4th call hangs in the embedding thread while
    # this thread writes and reports the group before it, then waits: 6 files stored; or the run
    # hangs after reporting file 5 (its group, files 5 and 6, was stored in one insert).
    output = tmp_path / "victim.out"
    victim = _start(
        output, "ingest", "--folder", folder, "--store", store, "--progress", progress, "--group", 4, *hang
    )
    reported = 6 if hang[0] == "--hang-at" else 5

    def hung() -> bool:
        events = _jsonl(progress)
        files = sum(r["event"] == "file" for r in events)
        return any(r["event"] == "hang" for r in events) and files >= reported

    try:
        _wait_until(hung, victim, f"hang with {reported} files reported", output)
        _kill9(victim)
    finally:
        _stop(victim)
    stored = {str(Path(r["path"]).resolve()) for r in _jsonl(progress) if r["event"] == "file"}
    assert len(stored) == reported
    assert not any(r["event"] == "done" for r in _jsonl(progress))

    # One stored file changes while the ingest is down: the re-run must drop its old chunks.
    changed = files[0]
    changed.write_text(changed.read_text() + "\nA later correction: the granite goes south.\n")
    index = ChunkIndex(uri=str(store), collection=worker.COLLECTION, embeddings=worker.embeddings())
    survived = _rows(index)
    # What the killed process reported stored survived the kill (the WAL); what survived is
    # whole files only (a group is inserted at once, so file 6 may be there with file 5).
    survivors = {source for _, source, _ in survived}
    assert stored <= survivors and len(survivors) <= len(stored) + 1
    assert len(survived) == 2 * len(survivors)

    report = ingest([folder], index=index, options=IngestOptions(progress=False))
    reference_index = ChunkIndex(
        uri=str(tmp_path / "reference.db"), collection=worker.COLLECTION, embeddings=worker.embeddings()
    )
    reference = ingest([folder], index=reference_index, options=IngestOptions(progress=False))
    assert not report.failed and not reference.failed, report.summary()
    rows, expected = _rows(index), _rows(reference_index)
    duplicates = {cid: n for cid, n in Counter(cid for cid, _, _ in rows).items() if n > 1}
    assert not duplicates
    # Same ids, sources and doc hashes as an uninterrupted ingest: nothing missing, no orphan,
    # no chunk of the changed file's old version.
    assert sorted(rows) == sorted(expected)
    assert {source for _, source, _ in rows} == {str(p.resolve()) for p in files}
    assert index.count() == reference_index.count() == reference.chunks == len(rows) >= 60
    assert report.total_chunks_in_store == reference.total_chunks_in_store == len(rows)

    results = {Path(f.path).resolve(): f for f in report.files}
    for path in files:
        result = results[path.resolve()]
        if path == changed:
            assert (result.added, result.removed_stale) == (result.chunks, 2), result
        elif str(path.resolve()) in survivors:
            assert (result.added, result.removed_stale) == (0, 0), result  # stored before the kill
        else:
            assert result.added == result.chunks == 2, result
