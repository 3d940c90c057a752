"""Every graph of ``langgraph.json`` served by ``langgraph dev`` (the in-memory LangGraph API)
on loopback, driven through ``langgraph-sdk`` the way a LangGraph user drives it.

What only the real server shows: its blockbuster refuses any blocking call on the serving
loop (a path resolved or a model loaded there fails the run with ``BlockingError``); it
passes ``context`` as JSON; its threads keep state between runs, so a second question on a
thread must not inherit the first one's counters, documents, steps or budgets.
The graphs search the demo corpus with the embedded MiniLM (loaded by the server, off its
loop) and talk to a scripted OpenAI-compatible chat server on loopback (``openai:scripted``,
the path vLLM and OpenAI users take), whose one reply makes every run deterministic: a
question asked on a used thread must give exactly what it gives on a new one.

Needs ``langgraph-cli[inmem]`` beside the package (not a declared extra: it pins protobuf
below what pymilvus installs by default); skipped without it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("langgraph_api", reason="needs `pip install 'langgraph-cli[inmem]'` beside the package")
pytest.importorskip("langgraph_sdk")

from langgraph_sdk import get_sync_client  # noqa: E402

from rag_graphs.catalog import METHODS  # noqa: E402
from tests.server.loopback import free_port, serving  # noqa: E402

pytestmark = pytest.mark.server

ROOT = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 180.0
QUESTION = "Where was Ilsa Brandt born?"
SECOND = "What is the Velmora Institute?"
BUDGET = {"k": 2, "max_hops": 2, "max_steps": 2, "max_answer_tokens": 24, "iterdrag_iterations": 2}
"""Sent as the run's ``context`` (JSON, as LangGraph Studio and the SDK send it)."""

BUILD_STORE = textwrap.dedent(
    """
    import sys
    from rag_graphs.ingestion import ingest
    from rag_graphs.store import load_embeddings, open_index
    from rag_graphs.ingestion.raptor import build_tree
    from rag_graphs.llm.models import load_chat_model
    uri, corpus = sys.argv[1], sys.argv[2]
    index = open_index(uri, "rag_graphs", load_embeddings("embedded"))
    ingest([corpus], index=index, entities="spacy", progress=False)  # hipporag needs the graph
    build_tree(index, load_chat_model("openai:scripted"), progress=False)
    """
)
"""Run in a child process: Milvus Lite lets one process hold a store, and the server needs it."""


REPLY = "Korvik [1]."
"""The scripted model's one reply: an answer with a citation; as a decision it parses as
nothing, so every loop stops on its first decision (``no_query``, ``no_form``)."""


class ScriptedChat(BaseHTTPRequestHandler):
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


@pytest.fixture(scope="module")
def scripted_chat() -> Iterator[str]:
    """The scripted chat server's OpenAI base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), ScriptedChat)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()


def rebased_config(folder: Path) -> Path:
    """The project's ``langgraph.json`` with its paths made absolute, written in ``folder``: the
    server runs there, so its own files (``.langgraph_api``) stay out of the checkout."""
    config = json.loads((ROOT / "langgraph.json").read_text())
    config["dependencies"] = [str(ROOT)]
    config["graphs"] = {name: str(ROOT / spec.removeprefix("./")) for name, spec in config["graphs"].items()}
    path = folder / "langgraph.json"
    path.write_text(json.dumps(config))
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory, demo_corpus, scripted_chat) -> Iterator[str]:
    """``langgraph dev`` on a free loopback port over the demo corpus; its URL."""
    folder = tmp_path_factory.mktemp("langgraph-api")
    uri = str(folder / "milvus.db")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "RAG_GRAPHS_STORE_URI": uri,
        "RAG_GRAPHS_CHAT_MODEL": "openai:scripted",
        "OPENAI_BASE_URL": scripted_chat,
        "OPENAI_API_KEY": "sk-local-no-key",
        "LANGSMITH_TRACING": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    }
    subprocess.run(
        [sys.executable, "-c", BUILD_STORE, uri, str(demo_corpus)], env=env, check=True, timeout=600
    )
    port = free_port()
    command = [
        *(sys.executable, "-c", "from langgraph_cli.cli import cli; cli()", "dev"),
        *("--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port)),
        *("--config", str(rebased_config(folder)), "--n-jobs-per-worker", "2"),
    ]
    url = f"http://127.0.0.1:{port}"
    log = folder / "server.log"
    with serving(
        command,
        health=f"{url}/ok",
        log=log,
        what="langgraph dev",
        startup=STARTUP_SECONDS,
        cwd=folder,
        env=env,
    ):
        yield url


MAY_NOT_SEARCH = {"auto", "react", "self_rag"}
"""Methods whose model decides whether to search at all."""


def check_answered(out: dict, question: str) -> None:
    """The one output contract, from the server's JSON: an answer, a known outcome, a chain."""
    assert "__error__" not in out and not out.get("error"), out
    assert isinstance(out["answer"], str) and out["answer"].strip(), out
    assert out["outcome"] in ("answered", "budget_exhausted", "unreliable", "no_evidence"), out
    assert out["steps"] and all("kind" in s for s in out["steps"]), out
    assert all(c["chunk_id"] for c in out.get("citations", [])), out


def test_every_graph_answers_through_the_sdk(server):
    client = get_sync_client(url=server)
    served = {a["graph_id"] for a in client.assistants.search(limit=100)}
    assert served == set(METHODS)
    for method in METHODS:
        out = client.runs.wait(None, method, input={"question": QUESTION}, context=BUDGET)
        check_answered(out, QUESTION)
        if method not in MAY_NOT_SEARCH:
            assert out["usage"].get("retrievals", 0) >= 1, (method, out)


def test_a_streamed_run_shows_progress_then_its_result(server):
    client = get_sync_client(url=server)
    events = list(
        client.runs.stream(
            None, "iterative", input={"question": QUESTION}, context=BUDGET, stream_mode=["custom", "values"]
        )
    )
    kinds = [e.event for e in events]
    assert "error" not in kinds, [e.data for e in events if e.event == "error"]
    progress = [e.data for e in events if e.event == "custom"]
    assert any(p.get("node") == "retrieve" for p in progress), kinds
    check_answered([e.data for e in events if e.event == "values"][-1], QUESTION)


@pytest.mark.parametrize("method", ["iterative", "naive"])
def test_two_questions_on_one_thread_each_start_clean(server, method):
    client = get_sync_client(url=server)
    thread = client.threads.create()["thread_id"]
    first = client.runs.wait(thread, method, input={"question": QUESTION}, context=BUDGET)
    second = client.runs.wait(thread, method, input={"question": SECOND}, context=BUDGET)
    alone = client.runs.wait(None, method, input={"question": SECOND}, context=BUDGET)
    check_answered(first, QUESTION)
    check_answered(second, SECOND)
    # the second run is the run of its own question: the same cost and chain as on a new thread
    assert second["usage"].get("retrievals") == alone["usage"].get("retrievals"), (second, alone)
    assert second["usage"].get("hops", 0) <= BUDGET["max_hops"]
    assert len(second["steps"]) == len(alone["steps"]), (second["steps"], alone["steps"])
    assert all(QUESTION not in s.get("query", "") for s in second["steps"])
    assert {d["id"] for d in second["documents"]} == {d["id"] for d in alone["documents"]}


def test_a_run_without_context_takes_the_environment_as_langgraph_json_opts_in(server):
    """Studio may send no context: ``langgraph.json``'s ``env`` sets ``RAG_GRAPHS_ENV_DEFAULTS=1``
    for the served graphs, so such a run reads the server's environment instead of being refused."""
    client = get_sync_client(url=server)
    check_answered(client.runs.wait(None, "naive", input={"question": QUESTION}), QUESTION)
