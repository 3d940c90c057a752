"""Small helpers every node uses: the run's model, usage accounting, progress events."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.config import get_stream_writer

from rag_graphs.context import RagContext
from rag_graphs.models import load_chat_model
from rag_graphs.state import Usage


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


def call_chat(ctx: RagContext, messages: list[BaseMessage]) -> tuple[AIMessage, Usage]:
    """Invoke the run's chat model; return the reply and its usage."""
    reply = chat_model(ctx).invoke(messages)
    return reply, llm_usage(reply)


def emit(node: str, event: str, **data: Any) -> None:
    """Send a progress event on LangGraph's ``custom`` stream (no-op when not streamed)."""
    try:
        writer = get_stream_writer()
    except RuntimeError:  # called outside a graph run
        return
    writer({"node": node, "event": event, **data})
