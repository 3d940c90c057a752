"""``ModelNode``: a node body that yields its model and store calls, run natively on sync and
async runs (``model_node`` is the decorator)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.runtime import Runtime

from rag_graphs.config.context import RagContext
from rag_graphs.config.runtime import get_context
from rag_graphs.llm.calls import Body, adrive, drive

NodeBody = Callable[[Any, RagContext], Body[dict]]
"""A node's logic: ``(state, context) -> generator`` that yields ``Call``/``Batch`` and returns the update."""


class ModelNode:
    """A graph node whose body yields its model and store calls (see ``rag_graphs.llm.calls``).

    Calling it runs the body synchronously; ``acall`` runs it on the event loop.
    ``rag_graphs.nodes.builder.MethodGraph.add_node`` registers both, so ``graph.invoke`` and
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
