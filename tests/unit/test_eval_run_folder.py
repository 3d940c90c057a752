"""One writer per run folder: a second evaluation of a folder another process is writing is
refused in one line naming the folder, and nothing is written twice.

Two real processes: the first evaluates with a chat model that stops at its first call until the
test releases it (a file), so the second starts while the first is mid-run, as when a slow run
is resumed from a second terminal. Each uses its own Milvus Lite store (one process per store),
so the only thing they share is the run folder.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from typer.testing import CliRunner

from rag_graphs.cli import app
from rag_graphs.eval import EvalOptions, evaluate, read_rows
from rag_graphs.eval.rows import RunFolderBusy

ROOT = Path(__file__).resolve().parents[2]
WAIT = 300.0
"""Seconds to wait for the first process to reach its first model call (a deadline, not a timing)."""

FIRST = """
import itertools, sys, time
from pathlib import Path
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from rag_graphs.config.context import RagContext
from rag_graphs.eval import EvalOptions, evaluate

dataset, run_dir, store, started, release = sys.argv[1:]

class Held(GenericFakeChatModel):
    def _generate(self, *args, **kwargs):
        Path(started).touch()
        while not Path(release).exists():
            time.sleep(0.05)
        return super()._generate(*args, **kwargs)

model = Held(messages=itertools.cycle([AIMessage(content="Korvik [1].")]))
ctx = RagContext(
    chat_model=model, embeddings=DeterministicFakeEmbedding(size=32), store_uri=store,
    collection="test", search_mode="hybrid",
)
where = EvalOptions(run_dir=run_dir, eval_store=store, progress=False)
evaluate(dataset, ["naive"], context=ctx, options=where)
"""


def _start_first(tiny: Path, run: Path, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    started, release = tmp_path / "started", tmp_path / "release"
    args = [str(tiny), str(run), str(tmp_path / "first.db"), str(started), str(release)]
    with (tmp_path / "first.log").open("w") as log:  # a file, not a pipe: a full pipe would block it
        first = subprocess.Popen([sys.executable, "-c", FIRST, *args], cwd=ROOT, stderr=log)
    deadline = time.monotonic() + WAIT
    while not started.exists():
        if first.poll() is not None:
            pytest.fail(f"the first evaluation ended early:\n{(tmp_path / 'first.log').read_text()}")
        if time.monotonic() > deadline:
            first.kill()
            pytest.fail("the first evaluation never reached its first model call")
        time.sleep(0.05)
    return first, release


class Held(GenericFakeChatModel):
    """The first process's model class (a run is resumed with the same chat model), never held."""


def _second(tiny: Path, run: Path, tmp_path: Path, make_context) -> Path:
    model = Held(messages=iter([AIMessage(content="Korvik [1].")] * 3))
    ctx = make_context(chat_model=model, search_mode="hybrid")
    store = str(tmp_path / "second.db")
    return evaluate(
        tiny, ["naive"], context=ctx, options=EvalOptions(run_dir=run, eval_store=store, progress=False)
    )


def test_a_second_process_on_a_run_folder_being_written_is_refused(tiny, tmp_path, make_context):
    run = tmp_path / "run"
    first, release = _start_first(tiny, run, tmp_path)
    try:
        with pytest.raises(RunFolderBusy, match=f"run folder {run} is being written by another evaluation"):
            _second(tiny, run, tmp_path, make_context)
    finally:
        release.touch()
        first.wait(timeout=WAIT)
    assert first.returncode == 0, (tmp_path / "first.log").read_text()
    rows = read_rows(run)
    assert [(r["method"], r["id"]) for r in rows] == [("naive", q) for q in ("q0", "q1", "q2")]
    # once the first has ended, the folder is free: a resume finds nothing left to run
    _second(tiny, run, tmp_path, make_context)
    assert len(read_rows(run)) == 3


def test_the_cli_names_the_busy_folder_in_one_line(tiny, tmp_path):
    run = tmp_path / "run"
    first, release = _start_first(tiny, run, tmp_path)
    try:
        result = CliRunner().invoke(app, ["eval", "--resume", str(run), "--dataset", str(tiny)])
    finally:
        release.touch()
        first.wait(timeout=WAIT)
    assert result.exit_code == 1 and "Traceback" not in result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert f"run folder {run} is being written by another evaluation" in line


def test_a_killed_writer_leaves_the_folder_free(tiny, tmp_path, make_context):
    run = tmp_path / "run"
    first, _ = _start_first(tiny, run, tmp_path)
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=WAIT)
    _second(tiny, run, tmp_path, make_context)
    assert [r["id"] for r in read_rows(run)] == ["q0", "q1", "q2"]
