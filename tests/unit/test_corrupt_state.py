"""Damaged state files and concurrent runs give one clear message, never a traceback or silence
(issue 30, part B): the persistent search cache, the checkpoints file, ``rows.jsonl``, run
directories of evaluations started in the same second, and one thread run twice at once."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from datetime import datetime

import pytest
from langchain_core.documents import Document

from rag_graphs.config.threads import CheckpointFileError, checkpoint_file
from rag_graphs.eval.rows import _run_folder, read_rows
from rag_graphs.run.threads import ThreadBusy, thread_lock
from rag_graphs.search.disk_cache import DiskCache, SearchCacheFileError


def test_a_cache_file_damaged_after_it_was_written_names_the_setting(tmp_path):
    path = tmp_path / "cache.sqlite"
    cache = DiskCache(path)
    ranking = [(Document(id="c1", page_content="x" * 400, metadata={}), 1.0)]
    cache.put_many({f"k{i}": ranking for i in range(200)}, cost=0.1)
    cache._db.close()  # checkpoints the WAL into the file
    with open(path, "r+b") as handle:  # SQLite's header intact, its pages garbage
        handle.seek(4096 * 2)
        handle.write(os.urandom(4096 * 4))
    damaged = DiskCache(path)
    with pytest.raises(SearchCacheFileError) as caught:
        damaged.get_many([f"k{i}" for i in range(200)])
    message = str(caught.value)
    assert "--search-cache-path" in message and str(path) in message and "delete it" in message
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)


def test_a_checkpoints_file_that_is_not_sqlite_is_named(tmp_path):
    path = tmp_path / "checkpoints.sqlite"
    path.write_text("these are my notes, not checkpoints\n")
    with pytest.raises(CheckpointFileError, match=r"checkpoints\.sqlite.*--checkpoints.*not an SQLite file"):
        checkpoint_file(path)
    assert path.read_text().startswith("these are my notes")  # never overwritten
    with pytest.raises(CheckpointFileError, match="is a folder"):
        checkpoint_file(tmp_path)


def test_ask_with_a_checkpoints_file_that_is_not_sqlite_fails_in_one_line(loaded, make_context, tmp_path):
    from rag_graphs.run import run

    path = tmp_path / "checkpoints.sqlite"
    path.write_bytes(b"\x00garbage" * 100)
    with pytest.raises(CheckpointFileError, match="--checkpoints"):
        run("naive", "Where?", make_context("Korvik [1]."), thread_id="t1", checkpoints=path)


def test_rows_that_are_not_result_rows_are_skipped_naming_file_and_line(tmp_path, caplog):
    good = {
        "method": "naive",
        "id": "q1",
        **dict.fromkeys(
            ["seconds", "model_seconds", "search_seconds", "llm_calls", "prompt_tokens", "completion_tokens"],
            1,
        ),
        "retrievals": 1,
    }
    lines = [json.dumps(good), "{}", "[1, 2]", '"text"', '{"method": "naive", "id": "q2", "seconds": "x"}']
    (tmp_path / "rows.jsonl").write_text("\n".join(lines) + '\n{"cut off')
    with caplog.at_level(logging.WARNING):
        rows = read_rows(tmp_path)
    assert rows == [good]
    warned = [r.getMessage() for r in caplog.records]
    for number in (2, 3, 4, 5, 6):
        assert any(f"rows.jsonl:{number}: skipped" in m for m in warned), warned


def test_eval_report_of_a_run_with_damaged_rows_renders(tmp_path):
    from rag_graphs.eval import markdown_table, summarize

    (tmp_path / "rows.jsonl").write_text("{}\n[1,2]\n")
    assert "method" in markdown_table(summarize(read_rows(tmp_path)))


def test_two_evaluations_started_in_the_same_second_get_their_own_folders(tmp_path, monkeypatch):
    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime(2030, 1, 2, 3, 4, 5)

    monkeypatch.setattr("rag_graphs.eval.rows.datetime", Frozen)
    first = _run_folder(None, tmp_path, "tiny")
    second = _run_folder(None, tmp_path, "tiny")
    assert first != second and first.is_dir() and second.is_dir()
    assert first.name == "tiny-20300102-030405" and second.name == "tiny-20300102-030405-2"
    assert _run_folder(first, tmp_path, "tiny") == first  # --resume keeps its folder


def test_one_thread_run_twice_at_once_refuses_the_second(tmp_path):
    path = checkpoint_file(tmp_path / "checkpoints.sqlite")
    with thread_lock(path, "t1"):
        with pytest.raises(ThreadBusy, match="thread 't1' is being run by another process"):
            with thread_lock(path, "t1"):
                pass
        with thread_lock(path, "t2"):  # another thread runs meanwhile
            pass
    with thread_lock(path, "t1"):  # released when the first run ended
        pass


def test_a_run_of_a_busy_thread_is_refused_before_it_runs(loaded, make_context, tmp_path):
    from rag_graphs.run import run

    path = tmp_path / "checkpoints.sqlite"
    ctx = make_context("Korvik [1].")
    with thread_lock(checkpoint_file(path), "t1"):  # as another process running thread t1 holds it
        with pytest.raises(ThreadBusy):
            run("naive", "Where?", ctx, thread_id="t1", checkpoints=path)
    assert run("naive", "Where?", ctx, thread_id="t1", checkpoints=path)["answer"] == "Korvik [1]."


def test_a_store_with_a_truncated_manifest_is_reported_damaged_not_empty(
    loaded, fake_embeddings, monkeypatch
):
    from pathlib import Path

    from typer.testing import CliRunner

    from rag_graphs import cli

    manifests = sorted(Path(loaded.uri).rglob("manifest.json"))
    assert manifests
    text = manifests[0].read_text()
    manifests[0].write_text(text[: len(text) // 2])  # a write cut off by a crash or a full disk
    monkeypatch.setattr("rag_graphs.search.retrieval.embeddings_for", lambda ctx: fake_embeddings)
    result = CliRunner().invoke(
        cli.app, ["sources", "--store", loaded.uri, "--collection", loaded.collection]
    )
    output = " ".join(result.output.split())
    assert result.exit_code == 1, output
    assert "is damaged" in output and "manifest.json" in output and "holds no chunks" not in output
    assert "Traceback" not in output
