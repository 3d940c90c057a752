"""Conversion by a real Docling Serve instance on loopback gives the chunks in-process conversion gives.

Docling Serve is not a dependency of this project: it pulls in Ray, Kubernetes and cloud-storage
clients, OpenCV, and a torchvision its startup imports unconditionally; there is no CPU build of
torchvision, so its own virtualenv takes the CUDA build of torch with it (``pip install
docling-serve`` in a fresh venv: about 7.3 GB, torch 2.15.0+cu132, torchvision 0.29.2, runs on
the CPU). Point ``DOCLING_SERVE_COMMAND`` at it (or install it beside this package); the test is
skipped, saying so, when neither is there.

The server sets up its standard PDF pipeline for every request, HTML and DOCX included, and
that pipeline's layout weights come from the Hugging Face Hub, unreachable here. The instance
is therefore started with models loaded on demand and remote services allowed, and asked
(``RAG_GRAPHS_DOCLING_SERVE_OPTIONS``) for the VLM pipeline with an API model for PDFs: it loads
no weights and is never called for the office and web formats under test.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

import pytest

from rag_graphs.ingestion import IngestOptions, ingest
from tests import doc_fixtures as fx
from tests.server.loopback import free_port, serving


def _command() -> list[str] | None:
    if given := os.environ.get("DOCLING_SERVE_COMMAND"):
        return shlex.split(given)
    return [sys.executable, "-m", "docling_serve"] if find_spec("docling_serve") else None


pytestmark = [
    pytest.mark.server,
    pytest.mark.skipif(
        _command() is None,
        reason="no Docling Serve: set DOCLING_SERVE_COMMAND (e.g. /opt/docling-serve/bin/docling-serve)",
    ),
    pytest.mark.xdist_group("docling_serve"),  # one worker starts its server (tests/conftest.py)
]
STARTUP_SECONDS = 180.0


@pytest.fixture(scope="module")
def docling_serve(tmp_path_factory) -> Iterator[str]:
    """``docling-serve run`` on a free loopback port; its base URL while it runs."""
    port = free_port()
    log = tmp_path_factory.mktemp("docling-serve") / "server.log"
    command = [*(_command() or []), "run", "--host", "127.0.0.1", "--port", str(port)]
    env = {
        **os.environ,
        "DOCLING_SERVE_LOAD_MODELS_AT_BOOT": "false",
        "DOCLING_SERVE_ENABLE_REMOTE_SERVICES": "true",
    }
    url = f"http://127.0.0.1:{port}"
    with serving(
        command, health=f"{url}/health", log=log, what="docling-serve", startup=STARTUP_SECONDS, env=env
    ):
        yield url


def _chunks(index) -> list[tuple[str, str]]:
    return sorted((d.metadata["kind"], d.page_content) for d, _ in index.iter_chunks())


@pytest.mark.parametrize("make", [fx.docx, fx.html], ids=["docx", "html"])
def test_docling_serve_converts_like_docling_in_process(
    docling_serve, make, tmp_path, fake_embeddings, monkeypatch
):
    from rag_graphs.store import ChunkIndex

    monkeypatch.setenv(
        "RAG_GRAPHS_DOCLING_SERVE_OPTIONS",
        '{"pipeline": "vlm", "vlm_pipeline_model": "granite_vision_ollama"}',
    )
    source: Path = make(tmp_path)
    here = ChunkIndex(uri=str(tmp_path / "here.db"), collection="c", embeddings=fake_embeddings)
    served = ChunkIndex(uri=str(tmp_path / "served.db"), collection="c", embeddings=fake_embeddings)
    local = ingest([source], index=here, options=IngestOptions(progress=False))
    remote = ingest(
        [source], index=served, options=IngestOptions(progress=False, docling_serve=docling_serve)
    )
    assert not local.failed and not remote.failed, remote.summary()
    assert remote.chunks == local.chunks > 0
    assert _chunks(served) == _chunks(here)
