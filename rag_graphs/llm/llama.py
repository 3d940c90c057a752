"""A thin LangChain chat model over llama-cpp-python's ``Llama``, run in this process.

Why our own: langchain-community's ``ChatLlamaCpp`` (what the embedded model ran on) warns on import
that the package is being sunset, and no maintained in-process integration replaces it
(``langchain-llama-cpp`` and ``langchain-llama-server`` talk to llama.cpp's HTTP server;
``langchain-llamacpp-chat-model`` was last released in 2024). llama-cpp-python already speaks
OpenAI's chat format, so this model only translates: messages to OpenAI dicts (langchain-core's
``convert_to_openai_messages``), the reply back to an ``AIMessage`` with its token usage, on
``invoke`` and on ``stream`` alike.

What it keeps from llama.cpp: the chat template inside the GGUF file, grammar-constrained JSON
(``response_format={"type": "json_object", "schema": ...}`` bound per call, as
``rag_graphs.llm.structured`` does), a forced tool call decoded under the tool's JSON schema
(``bind_tools(..., tool_choice=name)``, hence ``with_structured_output``), and the model's own
RoPE settings (``ChatLlamaCpp`` overrode them with fixed defaults).
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LangSmithParams, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, convert_to_openai_messages
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.output_parsers.openai_tools import make_invalid_tool_call, parse_tool_call
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, model_validator

LLAMA_LOCK = threading.Lock()
"""One generation at a time in this process: a llama.cpp context is not safe to use from two
threads (``graph.batch`` and concurrent server runs share one cached model), and two contexts
generating at once would fight over the same cores with spinning worker threads."""


class LlamaChat(BaseChatModel):
    """A GGUF chat model run by llama.cpp in this process.

    ``invoke`` reports token usage on the message (``usage_metadata``) as other chat models do;
    ``stream`` yields the reply token by token and puts the same counts on its last chunk.

    Every call evaluates its whole prompt afresh (``Llama.reset``), so a reply depends on its
    prompt alone, not on the calls before it. llama-cpp-python otherwise reuses the cached
    prefix of the previous prompt and evaluates only the rest; a prompt's last token then gets
    its logits from a batch of another size, which shifts them enough to change a greedy reply
    of this small model (measured: the same prompt sent twice got two different replies, and
    a graph's answer depended on which calls ran before it).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_path: str
    """The GGUF file."""
    n_ctx: int = 4096
    """Context window in tokens (prompt and reply)."""
    n_threads: int | None = None
    """Threads for generation and for prompt processing; None: llama-cpp-python's default."""
    max_tokens: int = 256
    """Cap on the reply's length in tokens."""
    temperature: float = 0.0
    top_p: float = 0.95
    top_k: int = 40
    repeat_penalty: float = 1.1
    """Penalty on repeated tokens (1.0: none)."""
    seed: int = 0
    """Sampling seed, set on every call so that a reply does not depend on the calls before it."""
    stop: list[str] | None = None
    """Strings that end the reply (the chat template's own end token always does)."""
    model_kwargs: dict[str, Any] = Field(default_factory=dict)
    """More arguments for ``llama_cpp.Llama`` (``n_batch``, ``n_gpu_layers``, ...)."""
    verbose: bool = False
    """llama.cpp's own logging on stderr."""
    client: Any = Field(default=None, exclude=True)
    """The ``llama_cpp.Llama`` behind the model (loaded from ``model_path`` when not given)."""

    @model_validator(mode="after")
    def _load(self) -> LlamaChat:
        if self.client is None:
            try:
                from llama_cpp import Llama
            except ImportError as exc:  # pragma: no cover - the extra is checked before loading
                raise RuntimeError(
                    "llama.cpp chat models need llama-cpp-python: pip install 'rag-graphs[embedded]'"
                ) from exc
            self.client = Llama(
                self.model_path,
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                # Prompt processing has its own count, which llama-cpp-python otherwise sets to the
                # host's CPUs (not the affinity mask): the same spinning threads on a shared core.
                n_threads_batch=self.n_threads,
                seed=self.seed,
                verbose=self.verbose,
                **self.model_kwargs,
            )
            # Freed before the interpreter tears down llama_cpp's module globals: left to
            # ``Llama.__del__`` at exit, the free finds them gone and prints a TypeError traceback.
            atexit.register(self.client.close)
        return self

    @property
    def _llm_type(self) -> str:
        return "llama-cpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_path": self.model_path, "n_ctx": self.n_ctx, **self._sampling()}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        """What LangSmith shows for a call: provider, model file, length cap, temperature."""
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "llama-cpp"
        params["ls_model_name"] = self._model_name()
        params["ls_max_tokens"] = self.max_tokens
        params["ls_temperature"] = self.temperature
        return params

    def _sampling(self) -> dict[str, Any]:
        return {
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "repeat_penalty": self.repeat_penalty,
            "seed": self.seed,
        }

    def _request(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict) -> dict[str, Any]:
        """The arguments of one ``create_chat_completion`` call: defaults, then what was bound."""
        return {
            "messages": convert_to_openai_messages(messages),
            **self._sampling(),
            "stop": stop or self.stop or [],
            **kwargs,
        }

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        request = self._request(messages, stop, kwargs)
        with LLAMA_LOCK:
            self.client.reset()
            response = self.client.create_chat_completion(**request)
        choice = response["choices"][0]
        message = _message(choice["message"])
        counts = response.get("usage") or {}
        message.usage_metadata = _usage(counts.get("prompt_tokens", 0), counts.get("completion_tokens", 0))
        info = {"finish_reason": choice.get("finish_reason"), "model_name": self._model_name()}
        message.response_metadata = {**message.response_metadata, **info}
        return ChatResult(generations=[ChatGeneration(message=message, generation_info=info)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """The reply as it is decoded. llama.cpp reports no token counts on a stream, so they are
        counted here (``_counted``): the prompt as the chat template tokenised it, the reply's
        tokens without the end token, the counts ``invoke`` reports for the same call."""
        request = self._request(messages, stop, kwargs)
        with LLAMA_LOCK, _counted(self.client) as counts:
            self.client.reset()
            finish, named = None, set[int]()
            for part in self.client.create_chat_completion(**request, stream=True):
                choice = part["choices"][0] if part.get("choices") else None
                if not choice:
                    continue
                finish = choice.get("finish_reason") or finish
                chunk = ChatGenerationChunk(message=_delta(choice.get("delta") or {}, named))
                if run_manager and chunk.text:
                    run_manager.on_llm_new_token(chunk.text, chunk=chunk)
                yield chunk
        info = {"finish_reason": finish, "model_name": self._model_name()}
        last = AIMessageChunk(
            content="",
            usage_metadata=_usage(counts.prompt, counts.completion),
            response_metadata=info,
            chunk_position="last",
        )
        yield ChatGenerationChunk(message=last, generation_info=info)

    def _model_name(self) -> str:
        return Path(self.model_path).name

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable | BaseTool],
        *,
        tool_choice: dict | str | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools in OpenAI's form. llama.cpp calls a tool only when it is forced to (then
        the arguments are decoded under the tool's JSON schema): ``tool_choice`` may name the
        tool (a name or OpenAI's dict), or be ``True``/``"any"``/``"required"`` with one tool;
        ``"auto"``/``"none"``/None leave the choice to the model, which then answers in text.

        Raises:
            ValueError: ``tool_choice`` names no bound tool, or forces one of several unnamed.
        """
        formatted = [convert_to_openai_tool(t) for t in tools]
        forced = _forced_tool(formatted, tool_choice)
        if forced is not None:
            kwargs["tool_choice"] = {"type": "function", "function": {"name": forced}}
        return super().bind(tools=formatted, **kwargs)


class _Counts:
    prompt = 0
    completion = 0


class _counted:  # noqa: N801 - used as a context manager, like a function
    """Count the tokens of the generation run inside: llama-cpp-python's ``Llama.generate`` is
    given the whole prompt and yields every sampled token (the last one may be the end token,
    which no reply counts). Wraps the instance's own method for the block, then restores it."""

    def __init__(self, llama: Any) -> None:
        self.llama = llama
        self.counts = _Counts()

    def __enter__(self) -> _Counts:
        llama, counts = self.llama, self.counts
        generate = llama.generate
        from llama_cpp import llama_vocab_is_eog

        def counting(tokens: Sequence[int], *args: Any, **kwargs: Any) -> Iterator[int]:
            counts.prompt = len(tokens)
            for token in generate(tokens, *args, **kwargs):
                if not llama_vocab_is_eog(llama._model.vocab, token):
                    counts.completion += 1
                yield token

        llama.generate = counting
        return counts

    def __exit__(self, *exc: object) -> None:
        del self.llama.generate  # the class's method again


def _forced_tool(tools: list[dict[str, Any]], choice: dict | str | bool | None) -> str | None:
    """The name of the tool ``choice`` forces, or None when it forces none."""
    names = [t["function"]["name"] for t in tools]
    if choice is None or choice is False or choice in ("auto", "none"):
        return None
    if choice is True or choice in ("any", "required"):
        if len(names) != 1:
            raise ValueError(
                f"tool_choice={choice!r} with {len(names)} tools: llama.cpp cannot choose among "
                f"tools, name the one to call ({', '.join(names)})"
            )
        return names[0]
    name = choice["function"]["name"] if isinstance(choice, dict) else choice
    if name not in names:
        raise ValueError(f"tool_choice {name!r} names no bound tool: {', '.join(names) or 'none bound'}")
    return name


def _usage(prompt: int, completion: int) -> UsageMetadata:
    return {
        "input_tokens": int(prompt),
        "output_tokens": int(completion),
        "total_tokens": int(prompt) + int(completion),
    }


def _message(reply: dict[str, Any]) -> AIMessage:
    """llama.cpp's reply message (OpenAI's form) as an ``AIMessage`` with parsed tool calls."""
    calls, invalid = [], []
    for raw in reply.get("tool_calls") or []:
        try:
            parsed = parse_tool_call(raw, return_id=True)
        except Exception as exc:  # the arguments are not JSON: kept, as OpenAI's models do
            invalid.append(make_invalid_tool_call(raw, str(exc)))
        else:
            if parsed:
                calls.append(parsed)
    return AIMessage(content=reply.get("content") or "", tool_calls=calls, invalid_tool_calls=invalid)


def _delta(delta: dict[str, Any], named: set[int]) -> AIMessageChunk:
    """One streamed delta (OpenAI's form) as a message chunk, tool-call pieces included.

    llama-cpp-python repeats a tool call's name and id on every piece, where OpenAI sends them
    once; chunks add up by concatenating them, so only the first piece of each call (its index,
    remembered in ``named``) keeps them."""
    pieces = []
    for call in delta.get("tool_calls") or []:
        index = call.get("index", 0)
        first = index not in named
        named.add(index)
        pieces.append(
            tool_call_chunk(
                name=call.get("function", {}).get("name") if first else None,
                args=call.get("function", {}).get("arguments"),
                id=call.get("id") if first else None,
                index=index,
            )
        )
    return AIMessageChunk(content=delta.get("content") or "", tool_call_chunks=pieces)
