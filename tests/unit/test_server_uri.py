"""The Milvus server code path, for real: milvus-lite serving a data directory over loopback gRPC."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest
from rag_graphs.ingestion import ingest

from rag_graphs.store import ChunkIndex


@pytest.fixture
def server_uri(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "milvus_lite",
            "server",
            "--data-dir",
            str(tmp_path / "served"),
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail(f"milvus-lite server exited with {proc.returncode}")
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("milvus-lite server did not listen within 60 s")
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=30)


def test_a_server_uri_ingests_searches_and_serves_two_clients(server_uri, demo_corpus, fake_embeddings):
    first = ChunkIndex(uri=server_uri, collection="shared", embeddings=fake_embeddings)
    report = ingest([demo_corpus], uri=server_uri, collection="shared", index=first, progress=False)
    assert not report.failed and report.added == report.chunks > 5
    # A second client (what a second process would open) sees the same chunks; no lock applies.
    second = ChunkIndex(uri=server_uri, collection="shared", embeddings=fake_embeddings)
    assert second.count() == report.chunks and second.hybrid
    hits = second.search("Velmora Institute founder", k=3)
    assert len(hits) == 3 and all(
        d.metadata["source"].endswith(tuple(".md .html .txt .csv".split())) for d, _ in hits
    )
    assert sum(n for kinds in second.sources().values() for n in kinds.values()) == report.chunks
