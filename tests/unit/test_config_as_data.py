"""Templates and config are data: prompt files cannot run code, user paths are resolved and
checked, and API keys never reach logs, LangSmith trace bodies or the evaluator's results files."""

from __future__ import annotations

import json
import logging
import os
import socket
import string
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.prompts import ChatPromptTemplate

import rag_graphs.prompts as prompts
from rag_graphs.config.tracing import spec_name, trace_config
from rag_graphs.eval import EvalOptions, evaluate, load_dataset, read_rows, write_report
from rag_graphs.eval.mining import mine_demonstrations
from rag_graphs.eval.rows import read_config
from rag_graphs.ingestion.convert.captioning import (
    ApiCaptioner,
    PictureInput,
    caption_all,
    load_captioner,
    redact_url,
)
from rag_graphs.methods import get_graph
from rag_graphs.prompts import _parse, list_prompts, load_prompt
from rag_graphs.support.redaction import redact
from rag_graphs.text.demonstrations import load_demonstrations
from tests.conftest import write_jsonl

CANARY = "sk-canary-7f3a9c2e"  # planted everywhere a key can come from; must appear in nothing recorded
SECRET_ENV = {  # the environment a user with keys has; every value carries the canary
    "OPENAI_API_KEY": f"{CANARY}-openai",
    "ANTHROPIC_API_KEY": f"{CANARY}-anthropic",
    "LANGSMITH_API_KEY": f"{CANARY}-langsmith",
    "LANGCHAIN_API_KEY": f"{CANARY}-langchain",
    "HF_TOKEN": f"{CANARY}-hf",
    "RAG_GRAPHS_API_KEY": f"{CANARY}-rag-graphs",
    "OPENAI_BASE_URL": f"https://proxy-user:{CANARY}-baseurl@llm.example/v1",
}
LEAKY_URL = (
    f"https://svc:{CANARY}-pw@llm.example/v1/chat/completions?api-version=2024-06-01&api_key={CANARY}-q"
)


@pytest.fixture
def secret_env(monkeypatch):
    for name, value in SECRET_ENV.items():
        monkeypatch.setenv(name, value)
    return SECRET_ENV


# -- 1. prompt templates -------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["../../etc/passwd", "/etc/passwd", "templates/answer_directly", "a\\b", "..", "answer_directly.txt", ""],
)
def test_prompt_names_pick_a_shipped_file_and_are_never_paths(name):
    with pytest.raises(ValueError, match="prompt name"):
        load_prompt(name)


def test_a_traversal_to_an_existing_txt_file_is_refused_not_loaded(tmp_path, monkeypatch):
    # Without the name check, templates/../outside.txt would load a file outside the folder.
    (tmp_path / "templates").mkdir()
    (tmp_path / "outside.txt").write_text("[human]\n{question}\n")
    monkeypatch.setattr(prompts, "_TEMPLATES", tmp_path / "templates")
    with pytest.raises(ValueError, match="prompt name '../outside'"):
        load_prompt("../outside")


def test_every_shipped_template_is_plain_f_string_placeholders():
    names = list_prompts()
    assert names
    root = Path(prompts.__file__).parent / "templates"
    for name in names:
        text = (root / f"{name}.txt").read_text(encoding="utf-8")
        fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
        assert fields and all(f.isidentifier() for f in fields), name
        template = load_prompt(name)
        assert {m.prompt.template_format for m in template.messages} == {"f-string"}, (
            name
        )  # no jinja/mustache


CODE_FIELDS = [
    "{question.__class__.__mro__}",
    "{question[0]}",
    "{0.__globals__}",
    "{question.__init__.__globals__[os]}",
]


@pytest.mark.parametrize("field", CODE_FIELDS)
def test_langchain_itself_refuses_attribute_access_and_indexing(field):
    # What langchain-core 1.7 does for f-string templates, relied on and pinned here.
    with pytest.raises(ValueError, match="Invalid variable name"):
        ChatPromptTemplate.from_messages([("human", field)], template_format="f-string")


@pytest.mark.parametrize(
    "field",
    [*CODE_FIELDS, "{question!r}", "{question:>40}", "{question:{context.__class__}}", "{}", "{ question }"],
)
def test_a_template_whose_placeholders_reach_python_is_refused_naming_file_and_field(
    tmp_path, monkeypatch, field
):
    # Beyond LangChain: conversions, format specs and odd names are refused too, with the file named.
    (tmp_path / "evil.txt").write_text(f"[human]\nQuestion: {field}\n")
    monkeypatch.setattr(prompts, "_TEMPLATES", tmp_path)
    load_prompt.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"prompts/templates/evil\.txt: placeholder \{") as info:
            load_prompt("evil")
    finally:
        load_prompt.cache_clear()
    assert field.strip("{}").split(":")[0].split("!")[0] in str(info.value)


def test_a_lone_brace_names_the_file():
    with pytest.raises(ValueError, match=r"prompts/templates/broken\.txt: .*literal braces"):
        _parse("broken", "[human]\n{question\n")


def test_jinja_and_mustache_syntax_stays_literal_text():
    template = ChatPromptTemplate.from_messages(
        _parse("t", "[human]\n{{ question.__class__ }} {{{{ x }}}} {question}"), template_format="f-string"
    )
    (message,) = template.format_messages(question="Q")
    assert message.content == "{ question.__class__ } {{ x }} Q"
    with pytest.raises(ValueError, match="placeholder"):  # a Jinja statement is no placeholder
        _parse("t", "[human]\n{% for x in question %}{{ x }}{% endfor %}")


PAYLOAD = "{context} {__import__('os').system('id')} {question.__class__} {0} {{x}} }{"


@pytest.mark.parametrize("name", list_prompts())
def test_substituted_values_are_never_reinterpreted(name):
    template = load_prompt(name)
    values = {v: f"<{v}:{PAYLOAD}>" for v in template.input_variables}
    text = "\n".join(str(m.content) for m in template.format_messages(**values))
    for variable, value in values.items():
        assert value in text, variable  # verbatim: braces in a value are text, not fields


# -- 2. paths users give -------------------------------------------------------


def test_demonstrations_path_is_expanded_resolved_and_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    write_jsonl(tmp_path / "demos.jsonl", [{"question": "Q?", "answer": "A"}])
    (demo,) = load_demonstrations("~/demos.jsonl")
    assert demo.answer == "A"
    with pytest.raises(FileNotFoundError, match=f"demonstrations file .* not found: {tmp_path}/nope.jsonl"):
        load_demonstrations("~/nope.jsonl")
    with pytest.raises(ValueError, match=f"must be a file, {tmp_path} is a folder"):
        load_demonstrations(tmp_path)


@pytest.mark.parametrize(
    "line,message",
    [
        ('["question", "answer"]', r"demos\.jsonl:2: expected a JSON object per line, got list"),
        ('"just text"', r"demos\.jsonl:2: expected a JSON object per line, got str"),
        ('{"question": "Q2?"}', r"demos\.jsonl:2: field 'answer' must be a non-empty string"),
        ('{"question": "Q2?", "answer": "A", "documents": "d"}', r"demos\.jsonl:2: field 'documents'"),
    ],
)
def test_a_bad_demonstration_row_is_named_by_file_and_line(tmp_path, line, message):
    path = tmp_path / "demos.jsonl"
    path.write_text('{"question": "Q?", "answer": "A"}\n' + line + "\n")
    with pytest.raises(ValueError, match=message):
        load_demonstrations(path)


def test_a_file_that_is_not_utf8_is_named_by_line(tmp_path):
    path = tmp_path / "dev.jsonl"
    path.write_bytes(b'{"question": "Q?", "answer": "A"}\n{"question": "\xff\xfe"}\n')
    with pytest.raises(ValueError, match=r"dev\.jsonl:2: not UTF-8"):
        load_dataset(path)


def test_dataset_paths_are_resolved_and_bad_files_named(tiny, tmp_path, monkeypatch):
    monkeypatch.chdir(tiny)
    ds = load_dataset(".")
    assert ds.name == "tiny" and ds.questions_path == tiny.resolve() / "dev.jsonl"
    (tiny / "meta.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"tiny/meta\.json: not valid JSON"):
        load_dataset(tiny)
    questions = write_jsonl(tmp_path / "q.jsonl", [{"question": "Q?", "answer": "A"}])
    with questions.open("a") as handle:
        handle.write("[1, 2]\n")
    with pytest.raises(ValueError, match=r"q\.jsonl:2: expected a JSON object per line, got list"):
        load_dataset(questions)


def test_run_directories_are_checked_before_anything_runs(tiny, tmp_path):
    a_file = tmp_path / "run.txt"
    a_file.write_text("not a run")
    with pytest.raises(ValueError, match=f"run directory must be a folder, {a_file} is a file"):
        evaluate(tiny, ["naive"], options=EvalOptions(run_dir=a_file, progress=False))
    with pytest.raises(FileNotFoundError, match=f"run directory not found: {tmp_path}/missing"):
        read_config(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="run configuration of .* not found: .*config.json"):
        read_config(tmp_path)
    (tmp_path / "config.json").write_text('{"dataset": ')
    with pytest.raises(ValueError, match=r"config\.json: not valid JSON"):
        read_config(tmp_path)
    with pytest.raises(ValueError, match="run directory must be a folder"):
        write_report(a_file)
    with pytest.raises(FileNotFoundError, match="run directory not found"):
        write_report(tmp_path / "missing")
    with pytest.raises(ValueError, match=f"demonstrations output must be a file, {tmp_path} is a folder"):
        mine_demonstrations(tiny, tmp_path, progress=False)


# -- 3. secrets ----------------------------------------------------------------


@pytest.mark.parametrize(
    "url,shown",
    [
        ("https://user:pw@host:8000/v1", "https://***@host:8000/v1"),
        ("https://ghp_token@host/v1", "https://***@host/v1"),
        (
            "https://h/v1?api-version=2024&api_key=k1&key=k2&token=k3",
            "https://h/v1?api-version=2024&api_key=***&key=***&token=***",
        ),  # noqa: E501
        ("http://127.0.0.1:19530", "http://127.0.0.1:19530"),
        (".rag-graphs/milvus.db", ".rag-graphs/milvus.db"),
        ("ollama:qwen3:8b", "ollama:qwen3:8b"),
    ],
)
def test_urls_are_shown_without_credentials(url, shown):
    assert redact_url(url) == shown


def test_redact_masks_urls_in_text_and_secret_environment_values(secret_env, monkeypatch, tmp_path):
    text = redact(f"ConnectError on {LEAKY_URL}; sent Bearer {secret_env['OPENAI_API_KEY']}")
    assert CANARY not in text and "llm.example/v1/chat/completions?api-version=2024-06-01" in text
    monkeypatch.setenv("PWD", str(tmp_path))  # a path in an env var whose name merely looks secret-ish
    assert redact(f"FileNotFoundError: {tmp_path}/dev.jsonl") == f"FileNotFoundError: {tmp_path}/dev.jsonl"
    assert spec_name("ollama:qwen3:8b") == "ollama:qwen3:8b"  # a spec is a name, kept as given ...
    assert (
        spec_name(f"openai:{secret_env['OPENAI_API_KEY']}") == "openai:***"
    )  # ... unless a key is pasted in
    assert spec_name(GenericFakeChatModel(messages=iter([]))) == "GenericFakeChatModel"


def test_trace_config_records_names_not_keys(make_context):
    ctx = make_context(store_uri=f"http://root:{CANARY}@milvus.example:19530?token={CANARY}")
    meta = trace_config(ctx, "naive", endpoint=LEAKY_URL, question_id="q1")["metadata"]
    assert CANARY not in json.dumps(meta)
    assert meta["store_uri"] == "http://***@milvus.example:19530?token=***" and meta["question_id"] == "q1"


def _bodies(received) -> str:
    return "\n".join(body.decode("utf-8", "replace") for _, _, body in received)


def _traced(standin, graph_input, ctx, **extra):
    from langsmith import Client
    from langsmith.run_helpers import tracing_context

    url, received = standin
    client = Client(api_url=url, api_key=f"{CANARY}-client", auto_batch_tracing=False)
    with tracing_context(enabled=True, client=client, project_name="rag-graphs-test"):
        out = get_graph("naive").invoke(graph_input, context=ctx, config=trace_config(ctx, "naive", **extra))
    client.flush()
    return out, _bodies(received)


def test_a_traced_run_sends_no_key_in_any_body(loaded, make_context, standin, secret_env, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    ctx = make_context("Korvik [1].", k=2)
    out, bodies = _traced(standin, {"question": "Where was Ilsa Brandt born?"}, ctx, endpoint=LEAKY_URL)
    assert out["answer"] == "Korvik [1]." and '"method":"naive"' in bodies  # the runs were recorded
    assert "api_key=***" in bodies  # the credentialed URL was recorded, redacted
    assert CANARY not in bodies
    assert CANARY not in caplog.text and CANARY not in "".join(capfd.readouterr())


def test_store_credentials_stay_out_of_the_trace(loaded, make_context, standin, monkeypatch):
    monkeypatch.setattr("rag_graphs.search.retrieval.open_index", lambda *args, **kwargs: loaded)
    ctx = make_context("Korvik [1].", k=2, store_uri=f"http://root:{CANARY}@milvus.example:19530")
    _, bodies = _traced(standin, {"question": "Where was Ilsa Brandt born?"}, ctx)
    assert "http://***@milvus.example:19530" in bodies and CANARY not in bodies


class LeakyErrorChat(GenericFakeChatModel):
    """Answers while it has replies, then fails like an HTTP client quoting the request it could not make."""

    def _generate(self, *args, **kwargs):
        try:
            return super()._generate(*args, **kwargs)
        except (StopIteration, RuntimeError):
            raise ConnectionError(
                f"POST {LEAKY_URL} failed; Authorization: Bearer {os.environ['OPENAI_API_KEY']}"
            ) from None


class _NoSleep:
    """The ``time`` module with ``sleep`` a no-op: LangGraph's retries run without waiting."""

    def __getattr__(self, name):
        return getattr(time, name)

    @staticmethod
    def sleep(seconds: float) -> None:
        pass


def test_an_evaluator_run_directory_holds_no_key(
    tiny, make_context, tmp_path, secret_env, caplog, capfd, monkeypatch
):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr("langgraph.pregel._retry.time", _NoSleep())  # ConnectionError is retried
    ctx = make_context(chat_model=LeakyErrorChat(messages=iter([AIMessage(content="Korvik")])))
    run = evaluate(
        tiny,
        ["naive"],
        context=ctx,
        options=EvalOptions(run_dir=tmp_path / "run", eval_store=str(tmp_path / "eval.db"), progress=False),
    )
    write_report(run)
    rows = read_rows(run)
    assert [bool(r["error"]) for r in rows] == [False, True, True]
    assert "ConnectionError: POST https://***@llm.example" in rows[-1]["error"]  # still says what failed
    assert "Retrying task generate" in caplog.text and "Bearer ***" in caplog.text  # logged, masked
    files = [p for p in run.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"config.json", "rows.jsonl", "report.md", "quality_vs_cost.png"}
    for path in files:
        assert CANARY.encode() not in path.read_bytes(), path.name
    assert CANARY not in caplog.text and CANARY not in "".join(capfd.readouterr())


class _VisionEndpoint(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat-completions stand-in that records what it was sent."""

    seen: list = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append((self.path, self.headers.get("Authorization")))
        choice = {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "A glider."},
        }
        body = json.dumps({"id": "c1", "created": 0, "choices": [choice]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args) -> None:
        pass


def test_the_api_captioner_sends_its_key_but_never_names_or_logs_it(secret_env, caplog, capfd, monkeypatch):
    from PIL import Image

    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr("docling.utils.api_image_request._RETRY_TOTAL", 1)  # one retry, logged, is enough
    server = ThreadingHTTPServer(("127.0.0.1", 0), _VisionEndpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    picture = PictureInput(Image.new("RGB", (8, 8)), "Fig. 1", "gliders")
    try:
        port = server.server_port
        captioner = load_captioner(f"api:http://127.0.0.1:{port}/v1?api-version=1&key={CANARY}-q#vision")
        assert isinstance(captioner, ApiCaptioner)
        (caption,) = caption_all(captioner, [picture])
        with_user = load_captioner(f"api:http://svc:{CANARY}-pw@127.0.0.1:{port}/v1#vision")
        (basic,) = caption_all(with_user, [picture])
    finally:
        server.shutdown()
    (path, bearer), (_, basic_auth) = _VisionEndpoint.seen[-2:]
    assert path == f"/v1/chat/completions?api-version=1&key={CANARY}-q"  # the endpoint gets its keys
    assert bearer == f"Bearer {secret_env['OPENAI_API_KEY']}" and basic_auth.startswith("Basic ")
    # ... and the name stored with every picture chunk does not.
    assert caption.captioner == f"api:http://127.0.0.1:{port}/v1?api-version=1&key=***#vision"
    assert basic.captioner == f"api:http://***@127.0.0.1:{port}/v1#vision"
    with socket.socket() as probe:  # a port nobody listens on: docling and urllib3 log the URL
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    down = load_captioner(f"api:http://127.0.0.1:{closed}/v1?key={CANARY}-down")
    (fallback,) = caption_all(down, [picture])
    assert fallback.captioner == "fallback"
    assert "Max retries exceeded" in caplog.text and "key=***" in caplog.text  # logged, but masked
    assert CANARY not in caplog.text and CANARY not in "".join(capfd.readouterr())
