"""``langgraph dev`` (the in-memory LangGraph API) on loopback for a test, in a few lines.

A test file builds a store in a child process (``build_store``: Milvus Lite lets one process hold
a store, and the server needs it), starts a scripted OpenAI-compatible chat server
(``scripted_chat``: its one reply makes every run deterministic), and serves the project's
``langgraph.json`` over both (``langgraph_server``), optionally with extra graphs or an ``auth``
section::

    with scripted_chat() as chat:
        env = served_env(folder / "milvus.db", chat)
        build_store(env, [Batch([str(corpus)])])
        with langgraph_server(folder, env=env) as url:
            get_sync_client(url=url).runs.wait(None, "naive", input={"question": "..."})

The store and models come from the server's environment (``served_env``), never from a run's
context: ``langgraph.json`` sets ``RAG_GRAPHS_SERVED=1``, under which a client context naming
``store_uri``, ``chat_model`` and the like is refused (``rag_graphs.config.runtime``).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.server.loopback import free_port, serving

ROOT = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 180.0
"""A bound on a hang, not a speed target: the server imports every graph before it answers."""

REPLY = "Korvik [1]."
"""The scripted model's one reply: an answer with a citation; as a decision it parses as
nothing, so every loop stops on its first decision (``no_query``, ``no_form``)."""


@dataclass(frozen=True)
class Batch:
    """Files ingested with one set of access labels (``IngestOptions``' ``tenant`` and ``tags``)."""

    paths: Sequence[str]
    tenant: str | None = None
    tags: Sequence[str] = field(default_factory=tuple)


_BUILD_STORE = textwrap.dedent(
    """
    import json, sys
    from rag_graphs.ingestion import IngestOptions, ingest
    from rag_graphs.store import load_embeddings, open_index
    from rag_graphs.ingestion.raptor import build_tree
    from rag_graphs.ingestion.community_reports import build_reports
    from rag_graphs.llm.models import load_chat_model
    from rag_graphs.llm.structured import invoke_structured
    spec = json.loads(sys.argv[1])
    index = open_index(spec["uri"], "rag_graphs", load_embeddings("embedded"))
    for batch in spec["batches"]:  # entities: hipporag needs the graph
        ingest(batch["paths"], index=index, options=IngestOptions(
            entities="spacy", progress=False, tenant=batch["tenant"], tags=tuple(batch["tags"])))
    if spec["raptor"]:  # the methods that read derived rows: raptor's tree, graphrag's reports
        build_tree(index, load_chat_model("openai:scripted"), progress=False)
        build_reports(index, load_chat_model("openai:scripted"), ask=invoke_structured, progress=False)
    """
)


def build_store(env: Mapping[str, str], batches: Sequence[Batch], *, raptor: bool = True) -> None:
    """Ingest ``batches`` into the store ``env["RAG_GRAPHS_STORE_URI"]`` names (collection
    ``rag_graphs``, the embedded MiniLM, a spaCy entity graph), then a RAPTOR tree and community
    reports written by the scripted chat (``raptor``), in a child process that releases the store
    when it exits."""
    spec = {"uri": env["RAG_GRAPHS_STORE_URI"], "batches": [asdict(b) for b in batches], "raptor": raptor}
    subprocess.run(
        [sys.executable, "-c", _BUILD_STORE, json.dumps(spec)], env=_process_env(env), check=True, timeout=600
    )


class _ScriptedChat(BaseHTTPRequestHandler):
    """``POST .../chat/completions`` answers ``REPLY``, as an OpenAI-compatible server does."""

    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps(
            {
                "id": "chatcmpl-scripted",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": "scripted",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def scripted_chat() -> Iterator[str]:
    """A scripted OpenAI-compatible chat server on loopback; its base URL (``.../v1``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ScriptedChat)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()


def served_env(store_uri: str | Path, chat_url: str, **extra: str) -> dict[str, str]:
    """The deployment's settings, as the server's environment: the store, the scripted chat
    (``openai:scripted`` at ``chat_url``), and any ``RAG_GRAPHS_*`` given in ``extra``."""
    return {
        "RAG_GRAPHS_STORE_URI": str(store_uri),
        "RAG_GRAPHS_CHAT_MODEL": "openai:scripted",
        "OPENAI_BASE_URL": chat_url,
        "OPENAI_API_KEY": "sk-local-no-key",
        **extra,
    }


def _process_env(env: Mapping[str, str]) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "LANGSMITH_TRACING": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        **env,
    }


def _absolute(spec: str) -> str:
    """``./rag_graphs/x.py:graph`` -> the same file under ``ROOT``, as an absolute path."""
    return str(ROOT / spec.removeprefix("./")) if spec.startswith("./") else spec


def write_config(
    folder: Path, *, graphs: Mapping[str, str] | None = None, auth: Mapping[str, Any] | None = None
) -> Path:
    """The project's ``langgraph.json`` with its paths (``http.app``'s too) made absolute, plus
    ``graphs`` (name -> ``./path.py:attr``) and ``auth`` (replacing the project's section), written
    in ``folder``: the server runs there, so its own files (``.langgraph_api``) stay out of the
    checkout."""
    config = json.loads((ROOT / "langgraph.json").read_text())
    config["dependencies"] = [str(ROOT)]
    served = {**config["graphs"], **(graphs or {})}
    config["graphs"] = {
        name: {**spec, "path": _absolute(spec["path"])} if isinstance(spec, dict) else _absolute(spec)
        for name, spec in served.items()
    }
    if "http" in config and "app" in config["http"]:  # the project's own MCP endpoint
        config["http"] = {**config["http"], "app": _absolute(config["http"]["app"])}
    if auth is not None:
        config["auth"] = dict(auth)
    if "auth" in config:
        config["auth"] = {**config["auth"], "path": _absolute(config["auth"]["path"])}
    path = folder / "langgraph.json"
    path.write_text(json.dumps(config))
    return path


@contextlib.contextmanager
def langgraph_server(
    folder: Path,
    *,
    env: Mapping[str, str],
    graphs: Mapping[str, str] | None = None,
    auth: Mapping[str, Any] | None = None,
) -> Iterator[str]:
    """``langgraph dev`` on a free loopback port, run in ``folder`` with ``env`` over this
    process's environment; its base URL. Stopped on exit; its output is ``folder/server.log``."""
    port = free_port()
    command = [
        *(sys.executable, "-c", "from langgraph_cli.cli import cli; cli()", "dev"),
        *("--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port)),
        *("--config", str(write_config(folder, graphs=graphs, auth=auth)), "--n-jobs-per-worker", "2"),
    ]
    url = f"http://127.0.0.1:{port}"
    with serving(
        command,
        health=f"{url}/ok",
        log=folder / "server.log",
        what="langgraph dev",
        startup=STARTUP_SECONDS,
        cwd=folder,
        env=_process_env(env),
    ):
        yield url
