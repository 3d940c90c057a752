"""Store failures are one line naming the store and the fix (issue 41, items 5 and 9).

Each command runs as a real process, so what is checked is what a user's terminal shows: pymilvus
printed 60-210 lines of traceback for a server it could not reach, one refusing the credentials,
and a local path not ending in ``.db``; a folder of the user's own files given as ``--store`` was
called a damaged store to restore from a backup, and Milvus Lite wrote its files into it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest

SECRET = "hunter2-not-shown"


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_GRAPHS_", "MILVUS_"))}
    env["COLUMNS"] = "80"  # a narrow terminal: a long line must still be one line
    return subprocess.run(
        [sys.executable, "-m", "rag_graphs.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    """The run's only output line, after checking it failed with exit 1 and no traceback."""
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Traceback" not in output and "Exception" not in output, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    return lines[0]


def _free_loopback_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _grpc_server(code: grpc.StatusCode, details: str):
    """A gRPC server on loopback that fails every call with ``code``; its port."""

    class Fail(grpc.GenericRpcHandler):
        def service(self, handler_call_details):
            def fail(request, context):
                context.abort(code, details)

            return grpc.unary_unary_rpc_method_handler(fail)

    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((Fail(),))
    return server, server.add_insecure_port("127.0.0.1:0")


@pytest.fixture
def refusing_server():
    """Answers every call as Milvus does a wrong password."""
    server, port = _grpc_server(
        grpc.StatusCode.UNAUTHENTICATED, "auth check failure, please check username and password are correct"
    )
    server.start()
    yield f"http://root:{SECRET}@127.0.0.1:{port}"
    server.stop(grace=None)


@pytest.fixture
def other_service():
    """A gRPC service that is not Milvus (every Milvus method unknown to it)."""
    server, port = _grpc_server(grpc.StatusCode.UNIMPLEMENTED, "Method not found!")
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop(grace=None)


def test_an_unreachable_server_is_one_line_naming_it_without_its_secret(tmp_path):
    port = _free_loopback_port()
    line = _one_line(_run("sources", "--store", f"http://root:{SECRET}@127.0.0.1:{port}", cwd=tmp_path))
    assert "cannot be reached" in line and f"http://***@127.0.0.1:{port}" in line
    assert SECRET not in line and "--store" in line


def test_a_server_refusing_the_credentials_is_one_line_saying_so(tmp_path, refusing_server):
    line = _one_line(_run("sources", "--store", refusing_server, cwd=tmp_path))
    assert "refused the credentials" in line and "MILVUS_TOKEN" in line
    assert SECRET not in line and "http://***@127.0.0.1:" in line


def test_a_port_that_is_not_milvus_is_one_line_saying_so(tmp_path, other_service):
    line = _one_line(_run("sources", "--store", other_service, cwd=tmp_path))
    assert "does not answer as a Milvus server" in line and other_service in line


def test_a_local_path_not_ending_in_db_is_named_not_a_store(tmp_path):
    line = _one_line(_run("sources", "--store", "./index", cwd=tmp_path))
    assert "'./index' is not a Milvus Lite store path" in line and ".db" in line
    assert not (tmp_path / "index").exists()


@pytest.mark.parametrize("command", [["sources"], ["ingest", "docs"], ["ask", "Where is the harbour?"]])
def test_a_folder_of_the_users_files_is_not_a_store_and_is_left_untouched(tmp_path, command):
    """Issue 41 item 9: it was "damaged, restore from a backup" (its own ``manifest.json``)."""
    mine = tmp_path / "notes.db"
    mine.mkdir()
    (mine / "manifest.json").write_text('{"name": "my web app",')  # not JSON: read as damaged before
    (mine / "todo.txt").write_text("buy rope\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("The harbour is north.\n")
    before = sorted(p.name for p in mine.iterdir())
    line = _one_line(_run(*command, "--store", str(mine), cwd=tmp_path))
    assert f"{str(mine)!r} is not a Milvus Lite store: it is a folder that holds other files" in line
    assert "damaged" not in line and "backup" not in line
    assert sorted(p.name for p in mine.iterdir()) == before  # nothing written into it


def test_an_empty_folder_and_an_existing_store_are_still_stores(tmp_path, fake_embeddings):
    """Controls: a new empty ``.db`` folder, and a store Milvus Lite made, open as before."""
    from rag_graphs.store import ChunkIndex
    from rag_graphs.store.lite import check_store_path

    (tmp_path / "empty.db").mkdir()
    check_store_path(str(tmp_path / "empty.db"))
    ChunkIndex(uri=str(tmp_path / "made.db"), collection="c", embeddings=fake_embeddings)
    check_store_path(str(tmp_path / "made.db"))


def test_listing_a_store_loads_no_embedding_model(tmp_path):
    """``sources`` embeds nothing, so it opens the store with the model deferred: listing, or
    saying the server cannot be reached, costs no torch import (3-12 s on these machines)."""
    store = str(tmp_path / "made.db")
    make = (
        "from langchain_core.documents import Document\n"
        "from langchain_core.embeddings import DeterministicFakeEmbedding\n"
        "from rag_graphs.store import ChunkIndex\n"
        f"index = ChunkIndex(uri={store!r}, collection='c', embeddings=DeterministicFakeEmbedding(size=8))\n"
        "meta = {'source': '/x/harbour.md', 'chunk_id': 'h1'}\n"
        "index.add([Document(page_content='The harbour ships salt.', metadata=meta)])\n"
    )
    listing = (
        "import atexit, runpy, sys\n"
        f"sys.argv = ['rag-graphs', 'sources', '--store', {store!r}, '--collection', 'c']\n"
        "heavy = ('torch', 'sentence_transformers')\n"
        "atexit.register(lambda: print('LOADED', [m for m in heavy if m in sys.modules]))\n"
        "runpy.run_module('rag_graphs.cli', run_name='__main__')\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_GRAPHS_", "MILVUS_"))}
    for script in (make, listing):
        result = subprocess.run(
            [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stdout + result.stderr
    assert "harbour.md" in result.stdout and "LOADED []" in result.stdout, result.stdout + result.stderr
