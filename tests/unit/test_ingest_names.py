"""File names that are not UTF-8, and the store's own folder, at ingest (issue 41, items 8 and 9).

The CLI runs as a real process (fake embeddings patched in before it starts), so the bytes
checked are the bytes a terminal would get. Its standard streams use ``surrogateescape``, as
Python's do under the POSIX locale: that is how a name's raw bytes 0x9B and 0x9D (C1 controls,
CSI and OSC on an 8-bit terminal) went out as they were.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.ingestion.convert.discover import NOT_UTF8, find_files
from rag_graphs.support.terminal import visible

HOSTILE = os.fsdecode(b"bad\x9b31m\x9dname.txt")
"""A Latin-1 era name: bytes 0x9B and 0x9D are not UTF-8, and each is a C1 control byte."""

CLI = (
    "import sys; from langchain_core.embeddings import DeterministicFakeEmbedding; "
    "import rag_graphs.ingestion.pipeline as p; "
    "p.load_embeddings = lambda spec: DeterministicFakeEmbedding(size=32); "
    "from rag_graphs.cli import app; sys.argv = ['rag-graphs', *sys.argv[1:]]; app()"
)


def _cli(*args: str, cwd: Path) -> tuple[int, bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_GRAPHS_")}
    env["PYTHONIOENCODING"] = "utf-8:surrogateescape"
    done = subprocess.run(
        [sys.executable, "-c", CLI, *args], cwd=cwd, env=env, capture_output=True, timeout=300
    )
    return done.returncode, done.stdout + done.stderr


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / HOSTILE).write_text("The red boat sails at dawn.\n")
    (folder / "good.txt").write_text("The blue boat sails at noon.\n")
    return folder


def test_visible_shows_undecodable_bytes_as_escapes():
    assert visible(HOSTILE) == "bad\\x9b31m\\x9dname.txt"
    visible(HOSTILE).encode("utf-8")  # nothing left that a UTF-8 terminal cannot take


def test_a_name_that_is_not_utf8_is_refused_with_the_reason(docs):
    found = find_files([docs])
    assert [f.name for f in found.files] == ["good.txt"]
    assert [(Path(r.path).name, r.reason) for r in found.refused] == [(HOSTILE, NOT_UTF8)]


def test_the_cli_shows_the_name_escaped_and_says_why(docs, tmp_path):
    code, output = _cli("ingest", str(docs), "--store", str(tmp_path / "s.db"), "--no-graph", cwd=tmp_path)
    assert b"\x9b" not in output and b"\x9d" not in output, output  # no raw C1 byte reaches the terminal
    text = output.decode("utf-8")
    assert "Traceback" not in text and "surrogates not allowed" not in text, text
    assert "1 file(s) ingested, 1 failed" in text and code == 0
    failed = [line for line in text.splitlines() if line.startswith("  FAILED")]
    assert failed == [f"  FAILED {docs}/bad\\x9b31m\\x9dname.txt: {NOT_UTF8}"], text


def test_a_store_inside_the_folder_is_not_ingested(tmp_path, fake_embeddings):
    """The store's own files (LOCK, manifests, parquet) were ingested: 10 FAILED lines."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("The harbour master keeps the keys.\n")
    store = str(project / "store.db")
    args = ("ingest", str(project), "--store", store, "--no-graph")
    assert _cli(*args, cwd=tmp_path)[0] == 0
    code, output = _cli(*args, cwd=tmp_path)
    text = output.decode("utf-8")
    assert code == 0 and "FAILED" not in text, text
    assert "1 file(s) ingested, 0 failed, 0 without text, 1 skipped, 1 unchanged" in text
    assert [line for line in text.splitlines() if line.startswith("  SKIPPED")] == [
        f"  SKIPPED {store}: the store this ingest writes to (its own files): not read"
    ]


def test_no_store_folder_is_read_however_it_is_named(tmp_path, fake_embeddings, monkeypatch):
    """Named directly, through a glob, as rag-graphs' default folder, or another store met on
    the way: one note each, none of their files."""
    from rag_graphs.store import ChunkIndex

    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("The lighthouse is white.\n")
    other = ChunkIndex(uri=str(tmp_path / "docs" / "old.db"), collection="c", embeddings=fake_embeddings)
    ingest(
        [tmp_path / "docs"], index=other, options=IngestOptions(progress=False, entities=None)
    )  # a store inside docs
    default = Path(".rag-graphs")
    default.mkdir()
    (default / "checkpoints.sqlite").write_text("not a document")
    index = ChunkIndex(uri=str(tmp_path / "new.db"), collection="c", embeddings=fake_embeddings)
    report = ingest(
        [tmp_path / "docs", default, "new.db/**/*.json"],
        index=index,
        options=IngestOptions(progress=False, entities=None),
    )
    assert [Path(f.path).name for f in report.files] == ["a.txt"] and not report.failed
    assert sorted(Path(s.path).name for s in report.skipped) == [".rag-graphs", "new.db", "old.db"]
