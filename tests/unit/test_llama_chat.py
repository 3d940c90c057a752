"""The project's own llama.cpp chat model (``rag_graphs.llm.llama``): what it sends to llama.cpp,
what it reports back, how structured output and tools reach the grammar, and, on the real
embedded model, that streaming and invoking agree and nothing warns of a sunset package."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel

from rag_graphs.llm import models
from rag_graphs.llm.llama import LlamaChat
from rag_graphs.llm.models import chooses_tools, load_chat_model
from rag_graphs.llm.structured import invoke_structured


class Grade(BaseModel):
    relevant: bool
    reason: str


class FakeLlama:
    """Stands for ``llama_cpp.Llama``: keeps each request, answers with the scripted reply."""

    def __init__(self, reply: dict[str, Any] | None = None, finish: str = "stop") -> None:
        self.requests: list[dict[str, Any]] = []
        self.resets = 0
        self.reply = reply or {"role": "assistant", "content": "Paris."}
        self.finish = finish

    def reset(self) -> None:
        self.resets += 1

    def create_chat_completion(self, **request: Any) -> dict[str, Any]:
        assert self.resets == len(self.requests) + 1, "a call began on the previous call's cache"
        self.requests.append(request)
        return {
            "choices": [{"index": 0, "message": self.reply, "finish_reason": self.finish}],
            "usage": {"prompt_tokens": 31, "completion_tokens": 4, "total_tokens": 35},
        }


def _model(client: FakeLlama, **settings: Any) -> LlamaChat:
    return LlamaChat(model_path="/models/small.gguf", client=client, **settings)


def test_a_call_sends_the_models_settings_and_reports_usage_on_the_message():
    client = FakeLlama(finish="length")
    reply = _model(client, max_tokens=7, repeat_penalty=1.3, seed=5).invoke("Capital of France?")
    [request] = client.requests
    assert request["messages"] == [{"role": "user", "content": "Capital of France?"}]
    assert (request["max_tokens"], request["repeat_penalty"], request["seed"]) == (7, 1.3, 5)
    assert request["temperature"] == 0.0 and request["stop"] == []
    assert reply.content == "Paris."
    assert reply.usage_metadata == {"input_tokens": 31, "output_tokens": 4, "total_tokens": 35}
    assert reply.response_metadata["finish_reason"] == "length"
    assert reply.response_metadata["model_name"] == "small.gguf"


def test_a_conversation_with_tool_calls_reaches_llama_cpp_in_openai_form():
    client = FakeLlama()
    call = {"name": "search", "args": {"query": "Korvik"}, "id": "c1", "type": "tool_call"}
    _model(client).invoke(
        [
            SystemMessage("You answer."),
            HumanMessage("Where is Korvik?"),
            AIMessage(content="", tool_calls=[call]),
            ToolMessage("Korvik is a town in Asterra.", tool_call_id="c1"),
        ]
    )
    sent = client.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert json.loads(sent[2]["tool_calls"][0]["function"]["arguments"]) == {"query": "Korvik"}
    assert sent[3]["tool_call_id"] == "c1"


def test_structured_decisions_decode_under_the_schemas_grammar():
    """``invoke_structured`` recognises the model by its type (it used to match a class name of
    langchain-community's) and binds the schema as llama.cpp's JSON grammar."""
    client = FakeLlama({"role": "assistant", "content": '{"relevant": true, "reason": "it says so"}'})
    out = invoke_structured(
        _model(client), [HumanMessage("Relevant?")], Grade, default=Grade(relevant=False, reason="-")
    )
    assert (out.method, out.value) == ("grammar", Grade(relevant=True, reason="it says so"))
    grammar = {"type": "json_object", "schema": Grade.model_json_schema()}
    assert client.requests[0]["response_format"] == grammar
    assert out.raw.usage_metadata["total_tokens"] == 35


def test_a_named_tool_is_forced_and_its_call_parsed():
    arguments = '{"relevant": false, "reason": "no"}'
    call = {"id": "call_0", "type": "function", "function": {"name": "Grade", "arguments": arguments}}
    client = FakeLlama({"role": "assistant", "content": None, "tool_calls": [call]})
    reply = _model(client).bind_tools([Grade], tool_choice="Grade").invoke("Relevant?")
    assert client.requests[0]["tool_choice"] == {"type": "function", "function": {"name": "Grade"}}
    assert client.requests[0]["tools"][0]["function"]["name"] == "Grade"
    assert reply.tool_calls == [
        {"name": "Grade", "args": {"relevant": False, "reason": "no"}, "id": "call_0", "type": "tool_call"}
    ]
    parsed = _model(FakeLlama(client.reply)).with_structured_output(Grade).invoke("Relevant?")
    assert parsed == Grade(relevant=False, reason="no")


def test_tool_choice_forces_only_what_llama_cpp_can():
    client = FakeLlama()
    _model(client).bind_tools([Grade], tool_choice="auto").invoke("Relevant?")
    assert "tool_choice" not in client.requests[0]  # the model answers in text
    with pytest.raises(ValueError, match="names no bound tool"):
        _model(client).bind_tools([Grade], tool_choice="search")
    with pytest.raises(ValueError, match="cannot choose among tools"):
        _model(client).bind_tools([Grade, SystemMessage], tool_choice="any")


def test_llama_cpp_models_do_not_choose_tools_themselves():
    assert chooses_tools(_model(FakeLlama())) is False


# -- the real embedded model ------------------------------------------------------------------

NO_SUNSET = """
import json, sys, warnings
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    from rag_graphs.llm.models import load_chat_model
    reply = load_chat_model("embedded", max_tokens=8).invoke("Say hello.")
flagged = [
    f"{w.category.__name__}: {w.message}" for w in seen
    if issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning, FutureWarning))
    or "deprecat" in w.category.__name__.lower() or "sunset" in str(w.message).lower()
]
print(json.dumps({"flagged": flagged, "community": "langchain_community" in sys.modules,
                  "tokens": reply.usage_metadata["output_tokens"]}))
"""


@pytest.mark.embedded
def test_loading_and_calling_the_embedded_model_warns_of_no_deprecation_or_sunset():
    """In a fresh process (a module imported earlier in this worker would not warn again)."""
    done = subprocess.run([sys.executable, "-c", NO_SUNSET], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["flagged"] == [], seen["flagged"]
    assert seen["community"] is False  # langchain-community, being sunset, is not even imported
    assert 0 < seen["tokens"] <= 8


@pytest.mark.embedded
def test_the_embedded_model_sends_its_settings_to_llama_cpp(monkeypatch):
    model = load_chat_model("embedded")
    sent: list[dict] = []
    create = model.client.create_chat_completion
    monkeypatch.setattr(model.client, "create_chat_completion", lambda **r: sent.append(r) or create(**r))
    model.invoke("Say hello.")
    assert (sent[0]["temperature"], sent[0]["repeat_penalty"], sent[0]["seed"]) == (0.0, 1.1, 0)
    assert sent[0]["max_tokens"] == 256
    runtime = model.client
    assert runtime.n_ctx() == 8192
    assert runtime.n_threads == runtime.n_threads_batch == models.llama_threads()


@pytest.mark.embedded
@pytest.mark.parametrize("max_tokens,finish", [(256, "stop"), (5, "length")])
def test_streaming_yields_the_reply_of_invoke_with_the_same_token_counts(max_tokens, finish):
    model = load_chat_model("embedded", max_tokens=max_tokens)
    question = "Name the capital of France in one sentence."
    whole = model.invoke(question)
    chunks = list(model.stream(question))
    assert len(chunks) > 2  # token by token, not one message
    streamed = chunks[0]
    for chunk in chunks[1:]:
        streamed += chunk
    assert streamed.content == whole.content and streamed.content
    assert streamed.usage_metadata == whole.usage_metadata
    assert whole.response_metadata["finish_reason"] == streamed.response_metadata["finish_reason"] == finish
    if finish == "length":
        assert whole.usage_metadata["output_tokens"] == max_tokens  # the reply-length cap holds


@pytest.mark.embedded
def test_a_forced_tool_call_streams_as_one_call():
    model = load_chat_model("embedded").bind_tools([Grade], tool_choice="Grade")
    chunks = list(model.stream("Is Paris in France?"))
    streamed = chunks[0]
    for chunk in chunks[1:]:
        streamed += chunk
    [call] = streamed.tool_calls
    assert call["name"] == "Grade" and isinstance(Grade.model_validate(call["args"]), Grade)
    assert streamed.usage_metadata["output_tokens"] > 0


@pytest.mark.embedded
def test_a_reply_depends_on_its_prompt_not_on_the_calls_before_it():
    """Reusing the previous prompt's cached prefix changed this reply (its last prompt token's
    logits then come from a batch of another size): every call evaluates its prompt afresh."""
    model = load_chat_model("embedded", max_tokens=16)
    first = model.invoke("Say hello.").content
    again = model.invoke("Say hello.").content  # the whole prompt was cached by the call before
    model.invoke("Tell me about Paris.")
    after_another = model.invoke("Say hello.").content
    assert first == again == after_another
