"""Choosing the checkpointer by ``checkpoints``: a SQLite path or a PostgreSQL URI; without a server."""

from __future__ import annotations

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
