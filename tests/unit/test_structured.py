"""The structured-output helper never crashes on a weak model's reply."""

from __future__ import annotations

from typing import Literal

import pytest
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from rag_graphs.llm.structured import invoke_structured, parse_lenient
from tests.conftest import fake_chat


class Grade(BaseModel):
    relevant: bool


class Route(BaseModel):
    action: Literal["retrieve", "answer"]
    reason: str = ""


class Plan(BaseModel):
    queries: list[str] = Field(min_length=1)


MESSAGES = [SystemMessage("You grade passages."), HumanMessage("Is it relevant?")]


@pytest.mark.parametrize(
    "text,expected",
    [
        ('{"relevant": true}', True),
        ('Sure! ```json\n{"relevant": false}\n``` hope that helps', False),
        ('Here: {"Relevant": true} done', True),
        ("Yes, the passage is relevant.", True),
        ("no", False),
    ],
)
def test_lenient_parser_recovers_bools(text, expected):
    assert parse_lenient(text, Grade) == Grade(relevant=expected)


def test_lenient_parser_accepts_a_bare_literal_choice():
    assert parse_lenient("I think we should retrieve more.", Route) == Route(action="retrieve")


@pytest.mark.parametrize("text", ["", "I cannot decide", '{"queries": []}', '{"queries": "x"', "{{{"])
def test_lenient_parser_returns_none_when_nothing_fits(text):
    assert parse_lenient(text, Plan) is None


def test_model_without_structured_output_gets_instructions_and_is_parsed():
    model = FakeListChatModel(responses=['blah {"queries": ["who founded Django"]} blah'])
    out = invoke_structured(model, MESSAGES, Plan, default=Plan(queries=["fallback"]))
    assert out.method == "parsed"
    assert out.value == Plan(queries=["who founded Django"])


def test_instructions_carry_the_schema_in_the_last_human_message():
    seen = []

    class Recorder(FakeListChatModel):
        def _call(self, messages, *args, **kwargs):
            seen.append(messages)
            return super()._call(messages, *args, **kwargs)

    invoke_structured(Recorder(responses=['{"relevant": true}']), MESSAGES, Grade, Grade(relevant=False))
    last = seen[0][-1]
    assert isinstance(last, HumanMessage)
    assert "Is it relevant?" in last.content and '"relevant"' in last.content and "JSON" in last.content


def test_garbage_reply_falls_back_to_the_default_and_says_why():
    model = fake_chat("The weather is nice today.")
    default = Plan(queries=["original question"])
    out = invoke_structured(model, MESSAGES, Plan, default=default)
    assert out.method == "default"
    assert out.value is default
    assert "unparseable" in (out.error or "")


def test_native_structured_output_is_preferred():
    class Native(FakeListChatModel):
        def with_structured_output(self, schema, include_raw=False, **kwargs):
            from langchain_core.runnables import RunnableLambda

            raw = AIMessage(
                content="", usage_metadata={"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}
            )
            return RunnableLambda(
                lambda _: {"raw": raw, "parsed": schema(relevant=True), "parsing_error": None}
            )

    out = invoke_structured(Native(responses=["unused"]), MESSAGES, Grade, Grade(relevant=False))
    assert (out.method, out.value.relevant, out.raw.usage_metadata["total_tokens"]) == ("native", True, 5)


def test_native_parse_failure_falls_back_to_raw_text():
    class BrokenNative(FakeListChatModel):
        def with_structured_output(self, schema, include_raw=False, **kwargs):
            from langchain_core.runnables import RunnableLambda

            raw = AIMessage(content="answer: yes")
            return RunnableLambda(lambda _: {"raw": raw, "parsed": None, "parsing_error": ValueError("x")})

    out = invoke_structured(BrokenNative(responses=["unused"]), MESSAGES, Grade, Grade(relevant=False))
    assert (out.method, out.value.relevant) == ("parsed", True)


def test_server_rejecting_native_structured_output_falls_back_and_counts_both_calls():
    class Rejecting(FakeListChatModel):
        def with_structured_output(self, schema, include_raw=False, **kwargs):
            from langchain_core.runnables import RunnableLambda

            def fail(_):
                raise ValueError("400: response_format is not supported by this server")

            return RunnableLambda(fail)

    out = invoke_structured(
        Rejecting(responses=['{"relevant": true}']), MESSAGES, Grade, Grade(relevant=False)
    )
    assert (out.method, out.value.relevant, len(out.calls)) == ("parsed", True, 1)


def test_native_reply_without_text_is_followed_by_a_text_attempt_and_both_are_counted():
    class EmptyNative(FakeListChatModel):
        def with_structured_output(self, schema, include_raw=False, **kwargs):
            from langchain_core.runnables import RunnableLambda

            raw = AIMessage(content="")
            return RunnableLambda(lambda _: {"raw": raw, "parsed": None, "parsing_error": None})

    out = invoke_structured(EmptyNative(responses=["yes"]), MESSAGES, Grade, Grade(relevant=False))
    assert (out.method, out.value.relevant, len(out.calls)) == ("parsed", True, 2)
