"""Structured decisions that survive weak models.

``invoke_structured`` asks a chat model for an object of a Pydantic schema in
the strongest way the model supports, and never raises on a bad reply
(``structured`` is the same decision as a node body, for sync and async runs):

1. ``grammar``: llama.cpp models run in process (``LlamaChat``, the embedded
   default) decode under a JSON grammar compiled from the schema, so the reply is
   always valid JSON;
2. ``native``: models with ``with_structured_output``; OpenAI-compatible servers
   get the best of JSON schema, JSON mode with the schema attached (a grammar on
   llama-cpp-python's server) and a forced tool call that the server has not
   refused (learned once per model: ``rag_graphs.llm.models.capabilities``);
3. ``parsed``: everything else gets the schema as text instructions
   (``prompts/templates/json_format_instructions.txt``) and a lenient parser
   that digs the JSON object out of prose or code fences and, for a single
   yes/no or choice field, accepts the bare word;
4. ``default``: when all of that fails, the caller's safe default.
"""

from __future__ import annotations

import json
import re
import typing
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel, ValidationError

from rag_graphs.llm.calls import Body, Call, drive
from rag_graphs.llm.faults import is_transient, rejected_as_invalid
from rag_graphs.llm.llama import LlamaChat
from rag_graphs.llm.models import capabilities
from rag_graphs.prompts import load_prompt

T = TypeVar("T", bound=BaseModel)
Method = Literal["grammar", "native", "parsed", "default"]

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


@dataclass
class Structured(Generic[T]):
    """Result of ``invoke_structured``: the value, how it was obtained, the raw replies."""

    value: T
    method: Method
    raw: AIMessage | None = None
    error: str | None = None
    calls: list[AIMessage] = field(default_factory=list)
    """Every model reply this result cost (a native attempt plus a fallback is two)."""


def _json_candidates(text: str) -> list[str]:
    """Substrings of ``text`` that may be a JSON object, most likely first."""
    out = [m.strip() for m in _FENCE.findall(text)]
    start = text.find("{")
    while start != -1:
        depth = 0
        for i in range(start, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    out.append(text[start : i + 1])
                    break
        start = text.find("{", start + 1)
    return out


def _single_choice_field(schema: type[BaseModel]) -> tuple[str, list[str]] | None:
    """For a one-required-field schema of bool or Literal type: (name, allowed words)."""
    required = [n for n, f in schema.model_fields.items() if f.is_required()]
    if len(required) != 1:
        return None
    name = required[0]
    annotation = schema.model_fields[name].annotation
    if annotation is bool:
        return name, ["yes", "no", "true", "false"]
    if typing.get_origin(annotation) is Literal:
        return name, [str(a) for a in typing.get_args(annotation)]
    return None


def parse_lenient(text: str, schema: type[T]) -> T | None:
    """Best-effort parse of ``text`` into ``schema``; ``None`` when nothing fits."""
    for candidate in _json_candidates(text):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            lowered = {str(k).lower(): v for k, v in data.items()}
            data = {n: lowered.get(n.lower(), data.get(n)) for n in schema.model_fields}
            data = {k: v for k, v in data.items() if v is not None}
            try:
                return schema.model_validate(data)
            except ValidationError:
                continue
    choice = _single_choice_field(schema)
    if choice:
        name, words = choice
        found = re.findall(r"[a-z_\-]+", text.lower())
        for word in found:
            if word in words:
                value: Any = word in ("yes", "true") if words[0] == "yes" else word
                try:
                    return schema.model_validate({name: value})
                except ValidationError:
                    return None
    return None


def _with_instructions(messages: list[BaseMessage], schema: type[BaseModel]) -> list[BaseMessage]:
    """Append the JSON instructions to the last human message (small models ignore late system text)."""
    note = (
        load_prompt("json_format_instructions")
        .format_messages(schema=json.dumps(schema.model_json_schema()))[-1]
        .content
    )
    out = list(messages)
    for i in range(len(out) - 1, -1, -1):
        if isinstance(out[i], HumanMessage):
            out[i] = HumanMessage(content=f"{out[i].content}\n\n{note}")
            return out
    return out + [HumanMessage(content=str(note))]


def structured(
    model: BaseChatModel, messages: list[BaseMessage], schema: type[T], default: T
) -> Body[Structured[T]]:
    """The calls of one structured decision, as a body for ``rag_graphs.llm.calls`` (nodes ``yield from`` it).

    Native modes are tried best first among those the model's server has not
    refused (``rag_graphs.llm.models.capabilities``): a mode the server rejects as an
    invalid request is remembered and never sent again, so a server without
    ``json_schema`` costs one rejected request per process, not one per decision.
    Any other failure of a native call (a reply the SDK cannot parse, a local
    ``NotImplementedError``) falls back to the text path for this call. Transient
    errors (network, rate limits, a dead server) raise: the caller retries or reports.
    """
    if isinstance(model, LlamaChat):
        grammar = {"type": "json_object", "schema": schema.model_json_schema()}
        raw = yield Call(model.bind(response_format=grammar), _with_instructions(messages, schema))
        return _from_text(raw, schema, default, "grammar", [])
    caps = capabilities(model)
    earlier: list[AIMessage] = []
    for mode in caps.structured_modes():
        try:
            result = yield from _native(model, mode, messages, schema, default, earlier)
        except NotImplementedError as exc:  # no native structured output at all
            caps.reject(mode, exc)
            continue
        except Exception as exc:
            if rejected_as_invalid(exc):
                caps.reject(mode, exc)
                continue
            if is_transient(exc):
                raise
            break  # this reply failed in a way that says nothing about the server: use text
        if result is not None:
            return result
        break
    raw = yield Call(model, _with_instructions(messages, schema))
    return _from_text(raw, schema, default, "parsed", earlier)


def _native(
    model: BaseChatModel,
    mode: str,
    messages: list[BaseMessage],
    schema: type[T],
    default: T,
    earlier: list[AIMessage],
) -> Body[Structured[T] | None]:
    """One native attempt in ``mode``; None when the reply held no usable object
    (its message is added to ``earlier``, so its tokens still count)."""
    if mode == "json_object":
        fmt = {"type": "json_object", "schema": schema.model_json_schema()}
        raw = yield Call(model.bind(response_format=fmt), _with_instructions(messages, schema))
        value = parse_lenient(str(raw.content), schema)
        if value is None:
            earlier.append(raw)
            return None
        return Structured(value, "native", raw, calls=[*earlier, raw])
    options = {} if mode == "with_structured_output" else {"method": mode}
    out = yield Call(model.with_structured_output(schema, include_raw=True, **options), messages)
    raw = out.get("raw")
    if isinstance(out.get("parsed"), schema):
        return Structured(out["parsed"], "native", raw, calls=[*earlier, raw] if raw is not None else [])
    if isinstance(raw, AIMessage):
        if isinstance(raw.content, str) and raw.content:
            return _from_text(raw, schema, default, "parsed", earlier)
        earlier.append(raw)
    return None


def invoke_structured(
    model: BaseChatModel, messages: list[BaseMessage], schema: type[T], default: T
) -> Structured[T]:
    """Ask ``model`` for a ``schema`` object; fall back to ``default`` instead of raising."""
    return drive(structured(model, messages, schema, default))


def _from_text(
    raw: Any, schema: type[T], default: T, method: Method, earlier: list[AIMessage]
) -> Structured[T]:
    text = raw.content if isinstance(raw.content, str) else json.dumps(raw.content)
    value = parse_lenient(text, schema)
    calls = [*earlier, raw]
    if value is None:
        return Structured(default, "default", raw, f"unparseable reply: {text[:200]!r}", calls)
    return Structured(value, method, raw, calls=calls)
