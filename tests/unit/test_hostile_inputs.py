"""Hostile command-line inputs get one clear error, at once, without a traceback.

``ask --k 99999999`` used to run for minutes (Milvus caps top-k at 16,384),
``ask ""`` was answered, a store path that is a file failed deep inside
"retrieve failed", and a locked store printed Milvus Lite's traceback before
the message that says what to do.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from rag_graphs import cli
from rag_graphs.store.lite import StoreLockedError


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli.app, list(args))
    return result.exit_code, " ".join(result.output.split())


def test_an_unbounded_k_is_refused_naming_the_setting(tmp_path):
    store = tmp_path / "s.db"
    code, output = _invoke("ask", "Where was Ilsa Brandt born?", "--k", "99999999", "--store", str(store))
    assert code == 1 and "k" in output and "16384" in output, output
    assert not store.exists()  # refused while reading the settings: no store was opened


@pytest.mark.parametrize("question", ["", "   ", "\n\t"])
def test_an_empty_question_is_refused(tmp_path, question):
    code, output = _invoke("ask", question, "--store", str(tmp_path / "s.db"))
    assert code == 1 and "question is empty" in output, output


@pytest.mark.parametrize("command", [["ask", "Where was Ilsa Brandt born?"], ["ingest", "."], ["sources"]])
def test_a_store_path_that_is_a_file_is_named_before_anything_runs(tmp_path, command):
    store = tmp_path / "store.db"
    store.write_text("not a store\n")
    code, output = _invoke(*command, "--store", str(store))
    assert code == 1 and f"store path '{store}' is a regular file" in output, output
    assert "Traceback" not in output and "retrieve failed" not in output


def test_a_store_path_under_a_file_or_unwritable_is_refused(tmp_path, monkeypatch):
    from rag_graphs.store.lite import check_store_path

    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="lies under .*file'?, a regular file"):
        check_store_path(str(tmp_path / "file" / "store.db"))
    monkeypatch.setattr("os.access", lambda path, mode: False)  # the tests may run as root
    with pytest.raises(ValueError, match="is not writable by this user"):
        check_store_path(str(tmp_path / "new" / "store.db"))
    check_store_path("http://localhost:19530")  # a server: nothing to check here


OPEN_IN_A_FRESH_PROCESS = """
import sys
from langchain_core.embeddings import DeterministicFakeEmbedding
from rag_graphs.store.index import ChunkIndex
from rag_graphs.store.lite import StoreLockedError
try:
    ChunkIndex(uri=sys.argv[1], collection="c", embeddings=DeterministicFakeEmbedding(size=8))
except StoreLockedError as exc:
    sys.exit(f"error: {exc}")
"""


def test_a_locked_store_is_reported_without_a_traceback(tmp_path, fake_embeddings):
    """As a user sees it: a fresh process (the CLI's ``_fail`` prints the same message), the
    store locked by another; before, Milvus Lite logged its traceback ahead of the message."""
    from rag_graphs.store import ChunkIndex

    store = tmp_path / "locked.db"
    store.mkdir()
    with open(store / "LOCK", "a") as held:  # another open file: flock treats it as another owner
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(StoreLockedError, match="open in another process"):
            ChunkIndex(uri=str(store), collection="c", embeddings=fake_embeddings)
        run = subprocess.run(
            [sys.executable, "-c", OPEN_IN_A_FRESH_PROCESS, str(store)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    output = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 1 and "open in another process" in output, output
    assert "Traceback" not in output


def test_a_megabyte_question_is_refused_in_one_line_before_anything_heavy(
    tmp_path, monkeypatch, loaded, make_context
):
    """A 1 MB question took 95 s and 3.3 GB in graph search before spaCy refused it with its raw
    E088 error (attack round 3): it is refused before any model, store search or tagger sees it,
    through the CLI and a graph alike."""
    from rag_graphs.methods import get_graph
    from rag_graphs.nodes.failures import RunFailed
    from rag_graphs.nodes.fresh import MAX_QUESTION_CHARS
    from rag_graphs.search import retrieval

    huge = "Where was Ilsa Brandt born? " * (1_000_000 // 28)
    code, output = _invoke("ask", huge, "--store", str(tmp_path / "s.db"))
    assert code == 1 and f"at most {MAX_QUESTION_CHARS:,}" in output and "Traceback" not in output, output[
        :300
    ]
    assert not (tmp_path / "s.db").exists()

    def searched(*args, **kwargs):
        raise AssertionError("a search ran")

    monkeypatch.setattr(retrieval, "search_plan", searched)
    with pytest.raises(ValueError, match="MAX_QUESTION_CHARS") as failure:
        get_graph("naive").invoke({"question": huge}, context=make_context())
    assert "\n" not in str(failure.value).strip()
    long_enough = "x" * MAX_QUESTION_CHARS  # the maximum itself is read
    with pytest.raises((RunFailed, AssertionError), match="a search ran"):
        get_graph("naive").invoke({"question": long_enough}, context=make_context())
