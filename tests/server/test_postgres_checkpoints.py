"""Thread checkpoints in a real PostgreSQL on loopback (``--checkpoints postgresql://...``).

The server is the Debian ``postgresql`` package's own binaries on a temporary data folder (no
cluster service): ``initdb`` and ``pg_ctl`` run as the ``postgres`` user when the tests run as
root (``initdb`` refuses root), listening on 127.0.0.1 and a socket in that folder, for this module.

A ``fixed_step`` run killed (``kill -9``) in its third model call, in one process, resumes in
another process from its last checkpoint and ends as an uninterrupted run does; while the first
process runs, the thread is refused to anyone else (the advisory lock); a kill releases it.
Two questions on one thread, the async entry point, and an unusable URI (one line, no password)
are checked in this process.
"""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_graphs.config.threads import CheckpointFileError
from rag_graphs.nodes.failures import RunFailed
from rag_graphs.run import Finished, Resumed, arun, run, stream
from rag_graphs.run.checkpointers import thread_saver
from rag_graphs.run.threads import ThreadBusy
from tests import crash_worker as worker
from tests.server.loopback import free_port
from tests.unit import test_crash_resume as crash
from tests.unit import test_run as runs

INITDB = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
pytestmark = [
    pytest.mark.skipif(
        not INITDB,
        reason="PostgreSQL binaries missing (/usr/lib/postgresql/*/bin): apt-get install postgresql",
    ),
    pytest.mark.xdist_group("postgres"),  # one worker starts its server (tests/conftest.py)
]
PASSWORD = "hunter2-not-shown"
"""In every URI the tests use: the server trusts loopback, so it is never checked, only hidden."""


def _as_owner(*command: str) -> list[str]:
    """``command`` as the ``postgres`` user when running as root (``initdb`` refuses root)."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else list(command)


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    """A PostgreSQL server for this module: a ``checkpoints`` database's URI; stopped and removed after."""
    import psycopg

    bin_dir = Path(INITDB[-1]).parent
    folder = Path(tempfile.mkdtemp(prefix="rag-graphs-pg-"))  # not under pytest's root-only tmp
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    data, port = folder / "data", free_port()
    subprocess.run(
        _as_owner(str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "rag", "--no-sync"),
        check=True,
        capture_output=True,
    )
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c fsync=off"
    ctl = [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log")]
    subprocess.run(_as_owner(*ctl, "-w", "-t", "60", "-o", options, "start"), check=True, capture_output=True)
    try:
        base = f"postgresql://rag:{PASSWORD}@127.0.0.1:{port}"
        with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
            conn.execute("CREATE DATABASE checkpoints")
        yield f"{base}/checkpoints"
    finally:
        subprocess.run(_as_owner(*ctl, "-m", "immediate", "stop"), capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def _checkpoint_steps(uri: str, thread: str) -> list[int]:
    """The ``step`` of every checkpoint of ``thread`` (the root graph's), read while the worker writes."""
    import psycopg

    with psycopg.connect(uri) as conn:
        if conn.execute("SELECT to_regclass('checkpoints')").fetchone() == (None,):
            return []  # the worker has not created the tables yet
        rows = conn.execute(
            "SELECT (metadata->>'step')::int FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = ''",
            (thread,),
        ).fetchall()
    return sorted(step for (step,) in rows)


def _next_nodes(uri: str, thread: str) -> tuple[str, ...]:
    from rag_graphs.methods import get_graph

    with thread_saver(uri, thread) as saver:
        return (
            get_graph("fixed_step", checkpointer=saver)
            .get_state({"configurable": {"thread_id": thread}})
            .next
        )


@pytest.mark.timeout(300)
def test_a_run_killed_in_one_process_resumes_in_another(postgres: str, tmp_path: Path) -> None:
    store, log = tmp_path / "crash.db", tmp_path / "calls.jsonl"
    common = ("graph", "--store", store, "--db", postgres, "--thread", "crashed", "--log", log)
    victim, output = crash.start_until_hang(tmp_path, common, 3, log)
    try:
        crash._wait_until(lambda: 4 in _checkpoint_steps(postgres, "crashed"), victim, "step 4", output)
        # One run per thread: the live run's connection holds the thread's advisory lock.
        with pytest.raises(ThreadBusy, match="'crashed' is being run by another process"):
            with thread_saver(postgres, "crashed"):
                pass
        with thread_saver(postgres, "another thread"):  # other threads run meanwhile
            pass
        crash._kill9(victim)
    finally:
        crash._stop(victim)
    killed = crash._jsonl(log)
    first, second, third = crash.STEPS[:3]  # the run hangs in its third call: next_query
    assert [(r["step"], r["event"]) for r in killed] == [(first, "call"), (second, "call"), (third, "hang")]
    assert max(_checkpoint_steps(postgres, "crashed")) == 4
    assert _next_nodes(postgres, "crashed") == ("next_query",)  # the kill released the thread's lock

    resumer, resumed = crash.resume_in_another_process(tmp_path, common)
    after = crash._jsonl(log)[len(killed) :]
    # The other process started at the step after the last checkpoint: nothing completed ran twice.
    assert [(r["pid"], r["step"], r["event"]) for r in after] == [
        (resumer.pid, step, "call") for step in crash.STEPS[2:]
    ]
    assert set(resumed["keys"]) >= crash.CONTRACT and resumed["pending"] == []
    assert resumed["answer"] == worker.REPLIES["generate"]  # what an uninterrupted run answers
    assert [s["node"] for s in resumed["steps"]] == runs.CHAIN
    assert resumed["citations"] and {d["type"] for d in resumed["documents"]} == {"Document"}
    assert resumed["usage"]["llm_calls"] == 5 and resumed["usage"]["retrievals"] == 2  # none counted twice


def test_two_questions_on_one_thread(postgres: str, loaded, make_context) -> None:
    thread = {"thread_id": "two", "checkpoints": postgres}
    first = run("naive", runs.QUESTION, make_context("Korvik [1].", k=1), **thread)
    assert first["answer"] == "Korvik [1]."
    idle = runs.scripted(AssertionError("a finished thread must not call the model"))
    events = list(stream("naive", runs.QUESTION, make_context(chat_model=idle, k=1), **thread))
    assert [type(e) for e in events] == [Resumed, Finished] and events[0].finished
    assert events[1].result["answer"] == first["answer"] and not idle.calls
    other = "Who founded the Velmora Institute?"
    ctx = make_context("Ilsa Brandt [1].", k=1, search_cache=0)
    second = run("naive", other, ctx, **thread)
    alone = run("naive", other, make_context("Ilsa Brandt [1].", k=1, search_cache=0))
    assert second["answer"] == alone["answer"] == "Ilsa Brandt [1]." and second["steps"] == alone["steps"]
    again = run("naive", other, make_context(chat_model=idle, k=1), **thread)
    assert again["answer"] == second["answer"] and not idle.calls


def test_arun_resumes_a_failed_run_with_the_async_checkpointer(postgres: str, loaded, make_context) -> None:
    async def twice() -> tuple[dict, object]:
        with pytest.raises(RunFailed):
            await arun(
                "fixed_step",
                runs.QUESTION,
                make_context(chat_model=runs._fail_at_next_query(), k=1),
                thread_id="async",
                checkpoints=postgres,
            )
        fixed = runs.scripted(*runs.SECOND_HALF)
        ctx = make_context(chat_model=fixed, k=1)
        return await arun("fixed_step", runs.QUESTION, ctx, thread_id="async", checkpoints=postgres), fixed

    out, fixed = asyncio.run(twice())
    assert out["answer"] == "Korvik [1]." and len(fixed.calls) == 3  # resumed at next_query


@pytest.mark.parametrize("where", ["refused", "no-database", "bad-port"])
def test_an_unusable_database_is_one_line_naming_the_setting_without_its_password(
    postgres: str, make_context, where: str
) -> None:
    base = postgres.rsplit("/", 1)[0]
    uri = {
        "refused": f"postgresql://rag:{PASSWORD}@127.0.0.1:{free_port()}/checkpoints",
        "no-database": f"{base}/missing",
        "bad-port": f"postgres://rag:{PASSWORD}@127.0.0.1:notaport/checkpoints",
    }[where]
    with pytest.raises(CheckpointFileError) as error:
        run("naive", runs.QUESTION, make_context("unused"), thread_id="t", checkpoints=uri)
    message = str(error.value)
    assert "--checkpoints" in message and "cannot be used" in message and "\n" not in message
    assert PASSWORD not in message and "rag:***@127.0.0.1" not in message and "***@127.0.0.1" in message
    if where == "no-database":
        assert 'database "missing" does not exist' in message


def test_the_cli_takes_the_uri_whole_and_fails_in_one_line(postgres: str, loaded) -> None:
    """``--checkpoints`` is read as text (a ``Path`` would fold the URI's ``//``); an unusable database
    is the CLI's one ``error:`` line, password masked, before any model is loaded."""
    from typer.testing import CliRunner

    from rag_graphs.cli import app

    uri = postgres.rsplit("/", 1)[0] + "/nowhere"
    args = ["ask", "--store", loaded.uri, "--collection", loaded.collection, "--thread-id", "t"]
    result = CliRunner().invoke(app, [*args, "--checkpoints", uri, runs.QUESTION])
    assert result.exit_code == 1, result.output
    (line,) = [line for line in result.output.splitlines() if line.strip()]
    assert line.startswith("error: checkpoints database 'postgresql://***@127.0.0.1:")
    assert 'database "nowhere" does not exist' in line and PASSWORD not in result.output
