"""The method builder: the graph every method wires its nodes into, and its compilation.

``MethodGraph`` wraps function nodes in ``rag_graphs.nodes.failures.guard`` and adds a ``ModelNode``
with native sync and async entry points; ``new_builder`` and ``linear_builder`` start a method's
graph with the shared state and contract; ``compile_method`` names it, sets retries and tracing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime, get_runtime
from langgraph.types import RetryPolicy

from rag_graphs.config.context import RagContext
from rag_graphs.config.runtime import get_context
from rag_graphs.llm.models import check_chat_model
from rag_graphs.nodes.failures import RETRY, guard
from rag_graphs.nodes.fresh import BEGIN, check_question, make_begin
from rag_graphs.nodes.model_node import ModelNode
from rag_graphs.state import InputState, OutputState, RagState
from rag_graphs.store.checks import check_dimension


def compile_method(
    builder: StateGraph,
    name: str,
    *,
    checkpointer: BaseCheckpointSaver | None = None,
    retry_policy: RetryPolicy | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile ``builder`` as method ``name``.

    Every node retries transient errors (``retry_policy``, default
    ``rag_graphs.nodes.failures.RETRY``); a node that still fails ends the run with
    ``RunFailed``, carrying the reasoning chain so far (see ``rag_graphs.nodes.failures``).
    Traced runs carry the method's name in metadata and tags.
    """
    from rag_graphs.config.tracing import method_config

    builder.set_node_defaults(retry_policy=retry_policy or RETRY)
    return builder.compile(name=name, checkpointer=checkpointer).with_config(method_config(name))


class BothWays(Runnable[Any, Any]):
    """A node with a native sync and a native async entry point, each handed the run's
    ``Runtime`` (LangGraph's public ``get_runtime``: the node runs inside the run's config).

    It records no run of its own, so traces show the node once, as for a function node.
    """

    def __init__(self, name: str, sync: Callable[..., Any], async_: Callable[..., Any]) -> None:
        self.name = name
        self._sync = sync
        self._async = async_

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._sync(input, get_runtime(RagContext))

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return await self._async(input, get_runtime(RagContext))


def begin_node(schema: type) -> Callable[..., dict[str, Any]]:
    """The node every method graph opens with (``rag_graphs.nodes.fresh.BEGIN``)."""
    reset = make_begin(schema)

    def begin(state: dict[str, Any], runtime: Runtime[RagContext]) -> dict[str, Any]:
        """Refuse a setup mistake before anything runs (``rag_graphs.store.checks``), then
        start the question from a clean run state (``rag_graphs.nodes.fresh``)."""
        from rag_graphs.search.retrieval import readable_index

        check_question(state.get("question"))  # before any model, store or tagger sees it
        ctx = get_context(runtime)
        check_chat_model(ctx.chat_model)
        if ctx.retriever is None:  # the user's own retriever has no store to check
            check_dimension(readable_index(ctx))
        return {**reset(state), "stops_for": sorted(ctx.interrupts)}

    return begin


class MethodGraph(StateGraph[Any, Any, Any, Any]):
    """A ``StateGraph`` whose function nodes are wrapped by ``rag_graphs.nodes.failures.guard``,
    so a failure anywhere ends the run with ``RunFailed`` and the chain so far.

    A ``ModelNode`` (a body that yields its calls) is added with both entry
    points, so ``invoke`` runs it synchronously and ``ainvoke`` natively async.

    It opens with ``BEGIN`` (``rag_graphs.nodes.fresh``): a method wires its first node from
    ``BEGIN``, so every new question on a thread starts from a clean run state, whoever drives
    the graph (``rag_graphs.run``, a checkpointer and a ``thread_id`` of the caller's own,
    LangGraph Server). An edge from ``START`` would run beside ``begin``, on the old state, and
    is refused.
    """

    def __init__(self, state: type, **kwargs: Any) -> None:
        super().__init__(state, **kwargs)
        super().add_node(BEGIN, begin_node(state))  # unguarded: a SetupError reaches the caller as is
        super().add_edge(START, BEGIN)

    def add_edge(self, start_key: str | list[str], end_key: str) -> MethodGraph:
        _not_from_start(start_key)
        return super().add_edge(start_key, end_key)

    def add_conditional_edges(self, source: str, *args: Any, **kwargs: Any) -> MethodGraph:
        _not_from_start(source)
        return super().add_conditional_edges(source, *args, **kwargs)

    def add_node(self, node: Any, action: Any = None, **kwargs: Any) -> MethodGraph:
        if isinstance(node, str) and isinstance(action, ModelNode):
            action = BothWays(node, guard(node, action.__call__), guard(node, action.acall))
        elif isinstance(node, str) and callable(action) and not isinstance(action, Runnable):
            action = guard(node, action)
        return super().add_node(node, action, **kwargs)


def _not_from_start(source: str | list[str]) -> None:
    if source == START or (isinstance(source, list) and START in source):
        raise ValueError(f"a method graph starts at {BEGIN!r}, not START: add_edge({BEGIN!r}, ...)")


def new_builder(state: type = RagState) -> MethodGraph:
    """An empty graph with the shared state (or a method's extension of it), the one
    input/output contract and ``RagContext``."""
    return MethodGraph(state, context_schema=RagContext, input_schema=InputState, output_schema=OutputState)


def linear_builder(*nodes: tuple[str, Callable[..., Any]], state: type = RagState) -> MethodGraph:
    """A graph that runs ``nodes`` once, in order: the whole wiring of single-pass methods."""
    builder = new_builder(state)
    for name, node in nodes:
        builder.add_node(name, node)
    names = [BEGIN, *(name for name, _ in nodes), END]
    for source, target in zip(names, names[1:], strict=False):
        builder.add_edge(source, target)
    return builder
