"""Choosing the checkpointer by ``checkpoints``: a SQLite path or a PostgreSQL URI; without a server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rag_graphs.config.threads import CheckpointFileError, checkpoint_file, is_postgres
from rag_graphs.run import run
from rag_graphs.run.checkpointers import thread_key
from tests.server.loopback import free_port


def test_a_uri_is_postgres_and_a_path_is_sqlite() -> None:
    assert is_postgres("postgresql://u:p@db/x") and is_postgres(" POSTGRES://db/x")
    assert not is_postgres("checkpoints.sqlite") and not is_postgres("./postgresql/x.sqlite")
    assert not is_postgres(Path("postgresql://db/x"))  # a Path never is: it folded the URI


def test_a_uri_folded_by_path_is_refused_not_made_a_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CheckpointFileError, match="pass the URI as a str") as error:
        checkpoint_file(Path("postgresql://rag:hunter2-secret@db/x"))
    assert "hunter2-secret" not in str(error.value) and not list(tmp_path.iterdir())


def test_thread_keys_are_stable_signed_64_bit_numbers() -> None:
    keys = {thread_key(f"t{i}") for i in range(1000)}
    assert len(keys) == 1000 and all(-(2**63) <= k < 2**63 for k in keys)
    assert thread_key("ilsa-1") == 2240759667050206763  # SHA-256: the same in every process and machine


def test_an_unreachable_server_fails_the_run_in_one_line_without_its_password(make_context) -> None:
    uri = f"postgresql://rag:hunter2-secret@127.0.0.1:{free_port()}/checkpoints"
    with pytest.raises(CheckpointFileError) as error:
        run("naive", "Where?", make_context("unused"), thread_id="t", checkpoints=uri)
    message = str(error.value)
    assert message.startswith("checkpoints database 'postgresql://***@127.0.0.1:") and "\n" not in message
    assert "(--checkpoints) cannot be used: connection failed" in message and "hunter2" not in message


SECRET = "hunter2-secret"


@pytest.mark.parametrize(
    "spec",
    [
        f"postgresql+psycopg://rag:{SECRET}@db:5432/checkpoints",  # SQLAlchemy's driver spelling
        f"jdbc:postgresql://db:5432/checkpoints?user=rag&password={SECRET}",
        f"host=db port=5432 user=rag password={SECRET} dbname=checkpoints",  # libpq's key=value
        f"host=db user=rag password='{SECRET} x' dbname=checkpoints",
        f"mysql://rag:{SECRET}@db/checkpoints",
        f"rag:{SECRET}@db/checkpoints.sqlite",  # a URI with its scheme forgotten
        "threads",  # a name that is no SQLite file's
    ],
)
def test_a_spec_that_is_neither_sqlite_nor_postgres_is_refused_and_nothing_is_made(
    spec, tmp_path: Path, monkeypatch, make_context
) -> None:
    """Issue 50 item 10: each was taken for a SQLite path, its folders and lock files made under
    the working folder with the password in their names."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    with pytest.raises(CheckpointFileError) as error:
        run("naive", "Where?", make_context("unused"), thread_id="t", checkpoints=spec)
    message = str(error.value)
    assert "(--checkpoints)" in message and "\n" not in message and SECRET not in message, message
    assert list(cwd.iterdir()) == []  # no folder, no lock, no database


@pytest.mark.parametrize(
    "uri,why",
    [
        (f"postgresql://rag:{SECRET}@[::1/checkpoints", "not a valid URI"),  # an unclosed IPv6 bracket
        (f"postgresql://rag:{SECRET}%zz@db/checkpoints", "a % that does not start a %XX escape"),
        (f"postgresql://rag:{SECRET} x@db/checkpoints", "a blank or control character"),
        (f"postgres://rag:{SECRET}@db:54x32/checkpoints", "not a valid URI"),  # a port that is no number
        ("postgresql://rag:hunter2/secret@db/checkpoints", "%2F"),  # libpq took 'rag:hunter2' for host:port
        ("postgresql://rag:hunter2@secret@db/checkpoints", "%40"),
    ],
)
def test_a_malformed_postgres_uri_is_one_line_without_its_password(uri, why, make_context) -> None:
    with pytest.raises(CheckpointFileError) as error:
        run("naive", "Where?", make_context("unused"), thread_id="t", checkpoints=uri)
    message = str(error.value)
    assert message.startswith("checkpoints database '") and "(--checkpoints) cannot be used: " in message
    assert why in message
    assert "\n" not in message and SECRET not in message and "hunter2" not in message, message


def test_the_cli_refuses_a_malformed_uri_in_one_line_without_a_traceback(tmp_path: Path) -> None:
    import subprocess
    import sys

    uri = f"postgresql://rag:{SECRET}@[::1/checkpoints"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_GRAPHS_")}
    done = subprocess.run(
        [sys.executable, "-m", "rag_graphs.cli", "ask", "--thread-id", "t", "--checkpoints", uri, "Where?"],
        cwd=tmp_path,
        env={**env, "RAG_GRAPHS_STORE_URI": str(tmp_path / "milvus.db")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in output and SECRET not in output, output
    (line,) = [x for x in output.splitlines() if x.strip()]
    assert line.startswith("error: checkpoints database 'postgresql://***@[::1/checkpoints' (--"), line


@pytest.mark.parametrize("name", ["c.sqlite", "c.sqlite3", "c.db", "C.SQLITE"])
def test_sqlite_specs_keep_working(name: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert checkpoint_file(name) == str(tmp_path / name)
    assert checkpoint_file(f"sqlite:///{name}") == str(tmp_path / name)  # SQLAlchemy's spelling
    assert checkpoint_file(f"sqlite:///{tmp_path}/deep/{name}") == str(tmp_path / "deep" / name)
    assert checkpoint_file(Path("deep") / name) == str(tmp_path / "deep" / name)


def test_an_existing_sqlite_file_of_another_name_is_still_read(tmp_path: Path, make_context) -> None:
    import sqlite3

    old = tmp_path / "threads.ckpt"
    sqlite3.connect(old).execute("CREATE TABLE t (x)").connection.close()
    assert checkpoint_file(old) == str(old)
