"""Small helpers every node uses: the run's model, usage accounting, progress events."""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.prompts import ChatPromptTemplate
from langgraph.config import get_stream_writer

from rag_graphs.citations import format_context
from rag_graphs.context import RagContext
from rag_graphs.demonstrations import format_demonstrations, load_demonstrations
from rag_graphs.models import load_chat_model
from rag_graphs.state import RagState, Usage, add_usage


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


def latest_documents(state: RagState) -> list[Document]:
    """The documents returned by the most recent retrieval of this run."""
    for step in reversed(state.get("steps", [])):
        if step.get("kind") == "retrieve":
            wanted = set(step.get("doc_ids", []))
            return [d for d in state.get("documents", []) if d.id in wanted]
        if step.get("node") == "retrieve":  # the latest retrieval was a skipped repeat
            return []
    return []


def answer_documents(state: RagState) -> list[Document]:
    """The passages an answer is generated from: the filtered ``context`` if a
    method set one (graded, refined), else every gathered document."""
    context = state.get("context")
    return context if context is not None else state.get("documents") or []


def demonstrations_input(template: ChatPromptTemplate, ctx: RagContext) -> dict[str, str]:
    """``{"demonstrations": text}`` when the template shows demonstrations (DRAG, IterDRAG), else ``{}``."""
    if "demonstrations" not in template.input_variables:
        return {}
    demos = load_demonstrations(ctx.demonstrations) if ctx.demonstrations else ()
    return {"demonstrations": format_demonstrations(demos, ctx.num_demos)}


def format_notes(notes: list[str]) -> str:
    """Intermediate answers as a bullet list (or a placeholder when there are none)."""
    return "\n".join(f"- {n}" for n in notes) if notes else "(none yet)"


def template_inputs(template: ChatPromptTemplate, state: RagState, **extra: Any) -> dict[str, str]:
    """The values a template asks for, drawn from the state.

    Shared nodes are parameterised by prompt; each prompt names the state it
    needs (``question``, ``query``, ``notes``, ``context``, ``answer``) and gets only that.
    """
    available = {
        "question": lambda: state["question"],
        "query": lambda: state.get("query") or state["question"],
        "notes": lambda: format_notes(state.get("notes", [])),
        "context": lambda: format_context(answer_documents(state)),
        "answer": lambda: state.get("answer", ""),
    }
    values = {}
    for name in template.input_variables:
        if name in extra:
            values[name] = extra[name]
        elif name in available:
            values[name] = available[name]()
        else:
            raise KeyError(f"prompt variable {name!r} has no source in the state")
    return values
