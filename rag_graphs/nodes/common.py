"""Small helpers every node uses: the run's model, usage accounting, progress events, and
``model_node``, which turns a body that yields calls into a node native on sync and async runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.prompts import ChatPromptTemplate
from langgraph.config import get_config, get_stream_writer
from langgraph.runtime import Runtime

from rag_graphs.calls import Body, Call, adrive, drive
from rag_graphs.citations import format_context
from rag_graphs.context import RagContext, get_context
from rag_graphs.demonstrations import (
    Demonstration,
    demonstrations_path,
    format_demonstrations,
    load_demonstrations,
)
from rag_graphs.models import load_chat_model
from rag_graphs.nodes.loop import normalize_query
from rag_graphs.state import RagState, Step, SubAnswer, Usage, add_usage

NodeBody = Callable[[Any, RagContext], Body[dict]]
"""A node's logic: ``(state, context) -> generator`` that yields ``Call``/``Batch`` and returns the update."""


class ModelNode:
    """A graph node whose body yields its model and store calls (see ``rag_graphs.calls``).

    Calling it runs the body synchronously; ``acall`` runs it on the event loop.
    ``MethodGraph.add_node`` registers both, so ``graph.invoke`` and
    ``graph.ainvoke`` are each native, and a body's batched calls run side by side.
    """

    def __init__(self, body: NodeBody, name: str) -> None:
        self.body = body
        self.name = name
        self.__name__ = name
        self.__doc__ = body.__doc__

    def __call__(self, state: Any, runtime: Runtime[RagContext]) -> dict:
        return drive(self.body(state, get_context(runtime)))

    async def acall(self, state: Any, runtime: Runtime[RagContext]) -> dict:
        # the context is built (and checked) with the body's code, off the event loop
        return await adrive(self._start(state, runtime))

    def _start(self, state: Any, runtime: Runtime[RagContext]) -> Body[dict]:
        return (yield from self.body(state, get_context(runtime)))


def model_node(body: NodeBody) -> ModelNode:
    """Decorator: ``body`` becomes a node (see ``ModelNode``)."""
    return ModelNode(body, body.__name__)


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


def node_name(default: str = "") -> str:
    """The running node's name, from LangGraph's run metadata (``default`` outside a run).

    Shared nodes name their steps and events by where a method wired them, so
    IterDRAG's ``follow_up`` retrieval shows as ``follow_up``, not ``retrieve``.
    """
    try:
        return str(get_config().get("metadata", {}).get("langgraph_node") or default)
    except RuntimeError:  # called outside a graph run
        return default


def step(kind: str, **fields: Any) -> Step:
    """One reasoning-chain entry of the running node (``steps`` is output: never read to decide)."""
    return {"node": node_name(kind), "kind": kind, **fields}  # type: ignore[typeddict-item]


def emit(event: str, **data: Any) -> None:
    """Send a progress event of the running node on LangGraph's ``custom`` stream (no-op unstreamed)."""
    try:
        writer = get_stream_writer()
    except RuntimeError:  # called outside a graph run
        return
    writer({"node": node_name(), "event": event, **data})


def latest_documents(state: RagState) -> list[Document]:
    """The documents the latest retrieval round found, best first ([] after a skipped repeat)."""
    by_id = {d.id: d for d in state.get("documents", [])}
    return [by_id[i] for i in state.get("latest", []) if i in by_id]


def answer_documents(state: RagState) -> list[Document]:
    """The passages an answer is generated from: the selected ``evidence`` if a method
    set one (graded, refined, arranged), else every gathered document."""
    evidence = state.get("evidence")
    return evidence if evidence is not None else state.get("documents") or []


def shown_demonstrations(ctx: RagContext, question: str) -> tuple[Demonstration, ...]:
    """The demonstrations a DRAG/IterDRAG prompt shows: the first ``num_demos`` of
    ``RagContext.demonstrations`` (none when it is ``none``), never one of ``question`` itself
    (a demonstration mined from an evaluated question would hand the model its answer)."""
    path = demonstrations_path(ctx.demonstrations)
    if not path:
        return ()
    asked = normalize_query(question)
    other = [d for d in load_demonstrations(path) if normalize_query(d.question) != asked]
    return tuple(other[: ctx.num_demos])


def demonstrations_input(template: ChatPromptTemplate, ctx: RagContext, question: str) -> dict[str, str]:
    """The demonstrations a template shows for ``question``, rendered: ``{demonstrations}`` as
    DRAG's question -> answer examples, ``{demonstration_chains}`` as IterDRAG's follow-up
    chains; ``{}`` for a template with neither."""
    wanted = {"demonstrations", "demonstration_chains"} & set(template.input_variables)
    if not wanted:
        return {}
    demos = shown_demonstrations(ctx, question)
    return {
        name: format_demonstrations(demos, ctx.num_demos, chains=name == "demonstration_chains")
        for name in wanted
    }


def format_notes(notes: list[str]) -> str:
    """Notes (intermediate answers, a chain of thought) as a bullet list, or a placeholder."""
    return "\n".join(f"- {n}" for n in notes) if notes else "(none yet)"


def format_sub_answers(answers: list[SubAnswer]) -> str:
    """Intermediate answers as ``query -> answer`` bullets."""
    return format_notes([f"{a['query']} -> {a['answer']}" for a in answers])


def template_inputs(template: ChatPromptTemplate, state: RagState, **extra: Any) -> dict[str, str]:
    """The values a template asks for, drawn from the state.

    Shared nodes are parameterised by prompt; each prompt names the state it
    needs (``question``, ``query``, ``notes`` = the intermediate answers,
    ``context`` = the answer's passages, ``answer``) and gets only that.
    A method whose notes are something else (IRCoT's chain of thought) passes them in ``extra``.
    """
    available = {
        "question": lambda: state["question"],
        "query": lambda: state.get("query") or state["question"],
        "notes": lambda: format_sub_answers(state.get("sub_answers", [])),
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
