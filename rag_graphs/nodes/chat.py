"""The run's chat model, one call of it for a body, and the usage counters of calls."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage

from rag_graphs.config.context import RagContext
from rag_graphs.llm.calls import Body, Call
from rag_graphs.llm.models import load_chat_model
from rag_graphs.state import Usage, add_usage


def chat_model(ctx: RagContext) -> BaseChatModel:
    """The context's chat model (loaded once per process)."""
    return load_chat_model(ctx.chat_model, max_tokens=ctx.max_answer_tokens)


def llm_usage(message: AIMessage | None) -> Usage:
    """Usage counters for one LLM call, from the message's ``usage_metadata``."""
    meta = getattr(message, "usage_metadata", None) or {}
    return Usage(
        llm_calls=1,
        prompt_tokens=int(meta.get("input_tokens", 0)),
        completion_tokens=int(meta.get("output_tokens", 0)),
    )


def calls_usage(messages: list[AIMessage]) -> Usage:
    """Summed usage of several LLM calls (e.g. a structured attempt and its fallback)."""
    total: Usage = {}
    for message in messages:
        total = add_usage(total, llm_usage(message))
    return total


def chat(ctx: RagContext, messages: list[BaseMessage]) -> Body[tuple[AIMessage, Usage]]:
    """One call of the run's chat model, for a body: ``reply, used = yield from chat(ctx, messages)``."""
    reply = yield Call(chat_model(ctx), messages)
    return reply, llm_usage(reply)
