"""Shared fixtures: offline flags, a temporary Milvus Lite store, fake models."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Tests never read the user's settings.
for _var in [v for v in os.environ if v.startswith("RAG_GRAPHS_")]:
    del os.environ[_var]
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    # `make test` runs one worker per usable CPU (pytest_xdist_auto_num_workers below): each
    # worker's llama.cpp (in process, in notebook kernels) gets its share of the CPUs, so the
    # workers together never run more spinning threads than there are cores.
    from rag_graphs.llm.models import LLAMA_THREADS_ENV, usable_cpus

    _share = usable_cpus() // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    os.environ[LLAMA_THREADS_ENV] = str(max(1, _share))
    # torch (MiniLM, here and in notebook kernels) likewise: with its default of one thread per
    # core in each worker, a query embedding took 511 ms instead of 21 (p50, 2 cores, load ~3).
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, _share)))

import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from importlib import resources  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from langchain_core.caches import BaseCache  # noqa: E402
from langchain_core.embeddings import DeterministicFakeEmbedding  # noqa: E402
from langchain_core.globals import get_llm_cache, set_llm_cache  # noqa: E402
from langchain_core.language_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402

from rag_graphs.config.context import RagContext  # noqa: E402
from rag_graphs.store import ChunkIndex  # noqa: E402
from tests.xdist_groups import pytest_collection_modifyitems  # noqa: E402, F401 - a hook


@pytest.hookimpl(optionalhook=True)  # a plain `pytest` (no xdist) runs too
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` = the CPUs this process may use (affinity mask, cgroup quota), as llama.cpp's
    threads are counted: xdist's own count asks psutil for the host's cores and ignores both, so
    under ``taskset -c 0`` it would start two workers on one core."""
    from rag_graphs.llm.models import usable_cpus

    return usable_cpus()


@pytest.fixture(scope="session")
def demo_corpus() -> Path:
    return Path(str(resources.files("rag_graphs").joinpath("demo_corpus")))


@pytest.fixture(scope="session")
def fake_embeddings() -> DeterministicFakeEmbedding:
    """Same text -> same vector; different texts -> unrelated vectors."""
    return DeterministicFakeEmbedding(size=32)


@pytest.fixture
def store_uri(tmp_path: Path) -> str:
    return str(tmp_path / "milvus.db")


@pytest.fixture
def index(store_uri: str, fake_embeddings) -> ChunkIndex:
    return ChunkIndex(uri=store_uri, collection="test", embeddings=fake_embeddings)


@pytest.fixture
def loaded(demo_corpus: Path, index: ChunkIndex) -> ChunkIndex:
    """The temporary index holding the demo corpus."""
    from rag_graphs.ingestion import IngestOptions, ingest

    ingest([demo_corpus], index=index, options=IngestOptions(progress=False))
    return index


def fake_chat(*replies: str | AIMessage) -> GenericFakeChatModel:
    """A chat model that returns ``replies`` in order (and fails when they run out).

    Replies come from a list iterator, never a generator: parallel branches (``Send``) call one
    model from several threads, and a generator entered twice at once raises "generator already
    executing".
    """
    return GenericFakeChatModel(
        messages=iter([r if isinstance(r, AIMessage) else AIMessage(content=r) for r in replies])
    )


class RecordingChat(GenericFakeChatModel):
    """A scripted chat model that also keeps every prompt it was sent (``seen``)."""

    seen: list = []

    def _generate(self, messages, *args, **kwargs):
        self.seen.append(messages)
        return super()._generate(messages, *args, **kwargs)


def recording_chat(*replies: str) -> RecordingChat:
    return RecordingChat(messages=iter([AIMessage(content=r) for r in replies]), seen=[])


class FakeToolChat(GenericFakeChatModel):
    """A scripted chat model that accepts ``bind_tools`` (its replies carry the tool calls)."""

    bound: list = []

    def bind_tools(self, tools, **kwargs):
        self.bound = list(tools)
        return self


def fake_tool_chat(*replies: str | AIMessage) -> FakeToolChat:
    """Like ``fake_chat``, for the native tool-calling path."""
    return FakeToolChat(
        messages=iter([r if isinstance(r, AIMessage) else AIMessage(content=r) for r in replies])
    )


@pytest.fixture
def make_context(store_uri: str, fake_embeddings):
    """Build a RagContext on the temporary store with fake embeddings and scripted replies."""

    def factory(*replies: str | AIMessage, **overrides) -> RagContext:
        values = dict(
            chat_model=fake_chat(*replies),
            embeddings=fake_embeddings,
            store_uri=store_uri,
            collection="test",
        )
        values.update(overrides)
        return RagContext(**values)

    return factory


@contextmanager
def replies_from(cache: BaseCache) -> Iterator[BaseCache]:
    """While inside, a chat model answers a prompt it was sent before from ``cache`` (LangChain's
    global LLM cache, keyed by the messages and the model's settings), without a model call.

    For the embedded model's runs, where a reply depends on its prompt alone (``LlamaChat``
    evaluates each prompt afresh, pinned by ``tests/unit/test_llama_chat.py`` and
    ``tests/e2e/test_embedded.py::test_embedded_model_is_deterministic_and_loaded_once``), so a
    cached reply is the one the model would give again. Never around a test of that determinism.
    ``stream`` does not read the cache: a streamed reply is always the model's."""
    before = get_llm_cache()
    set_llm_cache(cache)
    try:
        yield cache
    finally:
        set_llm_cache(before)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """A 3-question dataset folder in the ../shared/eval layout."""
    topics = [("Korvik", "Ilsa Brandt"), ("Lunmar", "Arden"), ("Velm", "Osric")]
    passages, questions = [], []
    for i, (place, person) in enumerate(topics):
        own = [
            {"id": f"p{i}a", "title": person, "text": f"{person} was born in {place}."},
            {"id": f"p{i}b", "title": place, "text": f"{place} is a harbour town of granite."},
            {"id": f"p{i}c", "title": "noise", "text": f"Unrelated text number {i} about weather."},
        ]
        passages += own
        questions.append(
            {
                "id": f"q{i}",
                "question": f"Where was {person} born?",
                "answer": place,
                "answer_aliases": [],
                "hops": 2,
                "type": "bridge" if i else "comparison",
                "supporting_ids": [f"p{i}a", f"p{i}b"],
                "passages": own,
            }
        )
    folder = tmp_path / "tiny"
    folder.mkdir()
    write_jsonl(folder / "dev.jsonl", questions)
    write_jsonl(folder / "corpus.jsonl", [{k: p[k] for k in ("id", "title", "text")} for p in passages])
    return folder


@pytest.fixture
def standin():
    """A local stand-in for the LangSmith API: accepts every call and records it (no network)."""
    received: list[tuple[str, str, bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def _ok(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received.append((self.command, self.path, body))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b"{}")

        do_GET = do_POST = do_PATCH = do_PUT = _ok

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", received
    server.shutdown()


SITE_PAGE = b"""<html><head><title>Ilsa Brandt</title></head><body>
<h1>Ilsa Brandt</h1><p>Ilsa Brandt, the founder of the Velmora Institute, was born in Korvik.</p>
</body></html>"""


@pytest.fixture
def site():
    """A loopback site: /brandt (HTML, no suffix), /moved (redirects to it), /loop (redirects
    to itself), /huge (2 MB), /broken (a PDF that is not one). Yields its base URL and the paths
    requested."""
    requested: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requested.append(self.path)
            if self.path in ("/moved", "/loop"):
                self.send_response(302)
                self.send_header("Location", "/brandt" if self.path == "/moved" else "/loop")
                self.end_headers()
                return
            body = SITE_PAGE if self.path == "/brandt" else b"x" * 2_000_000
            kind = "text/html; charset=utf-8"
            if self.path == "/broken":
                body, kind = b"%PDF-1.7\n not a PDF after all\n", "application/pdf"
            self.send_response(200 if self.path in ("/brandt", "/huge", "/broken") else 404)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", requested
    server.shutdown()


@pytest.fixture
def server_uri(tmp_path):
    """A Milvus server on loopback (milvus-lite serving a data directory over gRPC), stopped after."""
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


@pytest.fixture
def two_torch_threads():
    """torch on two threads for the test (whatever the worker's share), restored after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)
