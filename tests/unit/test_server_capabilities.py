"""What a served model supports is learned once and used: structured modes, tool calls, invalid
requests never retried, rewritten queries that only echo the prompt refused.

The OpenAI-compatible stand-in here answers like llama-cpp-python's server (its HTTP 500 on
``json_schema`` is copied from a real reply); the real server runs in ``tests/server``.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel

from rag_graphs.llm.faults import is_transient, rejected_as_invalid
from rag_graphs.llm.models import capabilities, chooses_tools
from rag_graphs.llm.structured import invoke_structured
from rag_graphs.methods import get_graph
from rag_graphs.nodes.rewrite import clean_query, content_words
from tests.conftest import fake_tool_chat

openai = pytest.importorskip("openai")
langchain_openai = pytest.importorskip("langchain_openai")

LLAMA_CPP_500 = {
    "error": {
        "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
        "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}",
        "type": "internal_server_error",
    }
}


class Relevant(BaseModel):
    relevant: bool


def _error(cls, code: int, body: dict):
    response = httpx.Response(code, request=httpx.Request("POST", "http://127.0.0.1/v1/chat/completions"))
    return cls(json.dumps(body), response=response, body=body)


def test_a_request_the_server_rejected_as_invalid_is_never_retried():
    invalid_500 = _error(openai.InternalServerError, 500, LLAMA_CPP_500)
    crashed_500 = _error(openai.InternalServerError, 500, {"error": {"message": "CUDA out of memory"}})
    bad_request = _error(openai.BadRequestError, 400, {"error": {"message": "unknown field"}})
    rate_limited = _error(openai.RateLimitError, 429, {"error": {"message": "slow down"}})
    assert rejected_as_invalid(invalid_500) and not is_transient(invalid_500)
    assert rejected_as_invalid(bad_request) and not is_transient(bad_request)
    assert is_transient(crashed_500) and not rejected_as_invalid(crashed_500)
    assert is_transient(rate_limited) and not rejected_as_invalid(rate_limited)


@pytest.fixture
def llama_like():
    """A loopback chat-completions server that refuses ``json_schema`` as llama-cpp-python's does
    and honours ``json_object``; records every request body."""
    bodies: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            bodies.append(body)
            kind = (body.get("response_format") or {}).get("type")
            if kind == "json_schema":
                status, reply = 500, LLAMA_CPP_500
            else:
                message = {"role": "assistant", "content": '{"relevant": true}'}
                usage = {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}
                choice = {"index": 0, "message": message, "finish_reason": "stop"}
                reply = {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"]}
                reply |= {"choices": [choice], "usage": usage}
            data = json.dumps(reply).encode()
            self.send_response(status if kind == "json_schema" else 200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/v1", bodies
    server.shutdown()


def test_structured_output_learns_once_what_the_server_supports(llama_like):
    url, bodies = llama_like
    model = langchain_openai.ChatOpenAI(model=f"standin-{url}", base_url=url, api_key="x", max_retries=0)
    question = [HumanMessage("Is the passage relevant?")]
    first = invoke_structured(model, question, Relevant, Relevant(relevant=False))
    assert first.value.relevant and first.method == "native"
    assert [(b.get("response_format") or {}).get("type") for b in bodies] == ["json_schema", "json_object"]
    assert bodies[1]["response_format"]["schema"] == Relevant.model_json_schema()  # llama.cpp's grammar
    assert "json_schema" in capabilities(model).rejected
    second = invoke_structured(model, question, Relevant, Relevant(relevant=False))
    assert second.value.relevant and len(bodies) == 3  # straight to the mode that works
    assert second.calls[0].usage_metadata["input_tokens"] == 11


def test_react_switches_to_the_text_protocol_when_the_model_never_calls_tools(loaded, make_context):
    # The first reply ignores the bound tools and answers from memory, as a chat format
    # without tool calls does; the agent must search instead of trusting it.
    model = fake_tool_chat(
        "She was born on the island of Orvella.",
        "Action: search[Velmora Institute founder]",
        "Final Answer: Korvik [1]",
    )
    ctx = make_context(chat_model=model, k=2)
    assert chooses_tools(model)
    out = get_graph("react").invoke({"question": "Where was Ilsa Brandt born?"}, context=ctx)
    assert out["steps"][0]["text"].startswith("native tool calls unused, switching to the text protocol")
    assert out["steps"][2]["query"] == "Velmora Institute founder" and out["usage"]["retrievals"] == 1
    assert out["answer"] == "Korvik [1]" and out["usage"]["llm_calls"] == 3
    assert not chooses_tools(model)  # learned: later runs start in the text protocol


def test_react_keeps_native_tool_calls_once_the_model_has_made_one(loaded, make_context):
    call = AIMessage(content="", tool_calls=[{"name": "search", "args": {"query": "Korvik"}, "id": "c1"}])
    model = fake_tool_chat(call, "Korvik [1].", "I know it: Orvella.")
    ctx = make_context(chat_model=model, k=2)
    get_graph("react").invoke({"question": "Where was Ilsa Brandt born?"}, context=ctx)
    out = get_graph("react").invoke({"question": "Who founded it?"}, context=ctx)
    assert out["answer"] == "I know it: Orvella." and chooses_tools(model)


PROMPT_WORDS = content_words(
    "You rewrite questions into better search queries for a document search engine. The earlier "
    "search found nothing useful. Use other words, name the key entities, drop filler. Reply with "
    "the search query only. Question: Earlier query: Better search query:"
)


@pytest.mark.parametrize(
    "reply,expected",
    [
        ("The earlier search found nothing useful. Use other words, name the key entities.", "Q"),
        ("Reply with the search query only.\nVelmora Institute founder", "Velmora Institute founder"),
        ("Better search query: Ilsa Brandt birthplace", "Ilsa Brandt birthplace"),
        ("search engine", "search engine"),  # two words are too few to call an echo
    ],
)
def test_a_rewritten_query_that_repeats_the_prompt_is_refused(reply, expected):
    assert clean_query(reply, fallback="Q", instructions=PROMPT_WORDS) == expected


def test_crag_rewrite_searches_the_question_when_the_model_echoes_its_instructions(loaded, make_context):
    from rag_graphs.nodes.rewrite import make_rewrite

    node = make_rewrite("rewrite_for_search")
    ctx = make_context("The earlier search found nothing useful. Use other words, name the key entities.")
    state = {"question": "Where was Ilsa Brandt born?", "query": "Brandt birth"}
    out = node(state, type("R", (), {"context": ctx})())
    assert out["query"] == "Where was Ilsa Brandt born?"


def test_react_forces_a_search_on_the_first_native_step_only(loaded, make_context):
    from tests.conftest import FakeToolChat

    class Recording(FakeToolChat):
        choices: list = []

        def bind_tools(self, tools, **kwargs):
            self.choices.append(kwargs.get("tool_choice"))
            return super().bind_tools(tools, **kwargs)

    call = AIMessage(content="", tool_calls=[{"name": "search", "args": {"query": "Korvik"}, "id": "c1"}])
    model = Recording(messages=iter([call, AIMessage(content="Korvik [1].")]), choices=[])
    out = get_graph("react").invoke(
        {"question": "Where was Ilsa Brandt born?"}, context=make_context(chat_model=model)
    )
    assert model.choices == ["search", None] and out["answer"] == "Korvik [1]."


def test_what_was_learned_of_an_unnamed_model_goes_with_it():
    """An unnamed model is known by its address; CPython hands a freed address to the next object,
    so a later model there must not inherit what a stranger's server refused."""
    import gc

    from langchain_core.language_models import GenericFakeChatModel

    from rag_graphs.llm import models

    model = GenericFakeChatModel(messages=iter([]))
    key = models.model_key(model)
    capabilities(model).no_tools("the server never called a tool")
    assert key in models._CAPS
    del model
    gc.collect()
    assert key not in models._CAPS
