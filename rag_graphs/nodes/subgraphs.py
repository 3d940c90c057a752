"""A method graph run as a node of another graph (``auto``'s routes), and reading where it waits.

LangGraph nests a graph called from a node's body with the node's config: it runs with the
parent's checkpointer and context under a checkpoint namespace of its own (a resumed parent
resumes it where it stopped), its events reach a ``stream(..., subgraphs=True)``, and a node
whose function closes over it shows it in ``get_subgraphs()`` and ``get_state(config,
subgraphs=True)``. Two things do not cross into it: the parent's ``interrupt_before`` (hence
``INTERRUPT_SUBGRAPHS_BEFORE``), and its state, which its node's update carries back up
(``followed`` applies it when the run stopped inside, before that update was written).
"""

from __future__ import annotations

import typing
from collections.abc import Collection, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StateSnapshot

from rag_graphs.nodes.failures import guard
from rag_graphs.state import OutputState, RagState

INTERRUPT_SUBGRAPHS_BEFORE = "rag_graphs_interrupt_subgraphs_before"
"""A ``configurable`` key of the run config: the nodes a graph run by ``subgraph_node`` stops
before. LangGraph's ``interrupt_before`` applies to the graph it is given to, never to the
graphs its nodes run, so ``rag_graphs.run``'s ``stop_before_answer`` names its stop here too."""


def stops(graph: CompiledStateGraph[Any, Any, Any, Any], config: RunnableConfig) -> list[str]:
    """The nodes of ``graph`` the run config asks subgraphs to stop before (none unless asked)."""
    asked = config.get("configurable", {}).get(INTERRUPT_SUBGRAPHS_BEFORE) or ()
    return [node for node in asked if node in graph.nodes]


def contract(values: Mapping[str, Any]) -> dict[str, Any]:
    """The answer contract's fields of ``values`` (answer, citations, documents, steps, usage...)."""
    return {k: v for k, v in values.items() if k in OutputState.__annotations__}


def subgraph_node(name: str, graph: CompiledStateGraph[Any, Any, Any, Any]) -> RunnableLambda[Any, Any]:
    """A node that asks ``graph`` the state's question and returns its answer contract as the
    update (the state's reducers put its steps after the caller's and add up the usage), natively
    sync under ``invoke`` and async under ``ainvoke``.

    ``guard`` gives a failure inside ``graph`` the caller's chain before the graph's own (and
    keeps it from being retried as a whole: the failing inner node was retried already).
    """

    def run_graph(state: RagState, config: RunnableConfig) -> dict[str, Any]:
        question = {"question": state["question"]}
        return contract(graph.invoke(question, config, interrupt_before=stops(graph, config)))

    async def arun_graph(state: RagState, config: RunnableConfig) -> dict[str, Any]:
        question = {"question": state["question"]}
        return contract(await graph.ainvoke(question, config, interrupt_before=stops(graph, config)))

    return RunnableLambda(guard(name, run_graph), afunc=guard(name, arun_graph), name=name)


def followed(outer: Mapping[str, Any], inner: Mapping[str, Any]) -> dict[str, Any]:
    """``outer`` with ``inner`` applied as LangGraph applies a node's update: through each
    answer-contract field's reducer (steps appended, usage added, documents merged)."""
    hints = typing.get_type_hints(OutputState, include_extras=True)
    out = dict(outer)
    for key, value in inner.items():
        reducer = next(iter(getattr(hints.get(key), "__metadata__", ())), None)
        out[key] = reducer(out[key], value) if reducer is not None and key in out else value
    return out


def waiting_before(state: StateSnapshot, nodes: Collection[str]) -> tuple[str, dict[str, Any]] | None:
    """The node of ``nodes`` a checkpointed run waits before, in its graph or in a subgraph
    (``state`` read with ``subgraphs=True``), and the answer contract so far: the graph's own,
    followed by the waiting subgraph's. None when it waits before none of them."""
    if (node := next((n for n in state.next if n in nodes), None)) is not None:
        return node, contract(state.values)
    for task in state.tasks:
        inner = waiting_before(task.state, nodes) if isinstance(task.state, StateSnapshot) else None
        if inner is not None:
            return inner[0], followed(contract(state.values), inner[1])
    return None
