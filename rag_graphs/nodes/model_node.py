"""``ModelNode``: a node body that yields its model and store calls, run natively on sync and
async runs (``model_node`` is the decorator)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from langgraph.runtime import Runtime

from rag_graphs.config.context import RagContext
from rag_graphs.config.prompts import run_templates
from rag_graphs.config.runtime import get_context
from rag_graphs.llm.calls import Body, adrive, drive
from rag_graphs.prompts import replacing

NodeBody = Callable[[Any, RagContext], Body[dict]]
"""A node's logic: ``(state, context) -> generator`` that yields ``Call``/``Batch`` and returns the update."""


class ModelNode:
    """A graph node whose body yields its model and store calls (see ``rag_graphs.llm.calls``).

    Calling it runs the body synchronously; ``acall`` runs it on the event loop.
    ``rag_graphs.nodes.builder.MethodGraph.add_node`` registers both, so ``graph.invoke`` and
    ``graph.ainvoke`` are each native, and a body's batched calls run side by side.
    Either way the body runs under the run's prompts (``run_prompts``).
    """

    def __init__(self, body: NodeBody, name: str) -> None:
        self.body = body
        self.name = name
        self.__name__ = name
        self.__doc__ = body.__doc__

    def __call__(self, state: Any, runtime: Runtime[RagContext]) -> dict:
        ctx = get_context(runtime)
        with run_prompts(ctx):
            return drive(self.body(state, ctx))

    async def acall(self, state: Any, runtime: Runtime[RagContext]) -> dict:
        # the context is built (and checked) off the event loop: it reads the environment
        ctx = await asyncio.to_thread(get_context, runtime)
        with run_prompts(ctx):
            return await adrive(self.body(state, ctx))


def run_prompts(ctx: RagContext) -> AbstractContextManager[None]:
    """While a body runs, the templates it fills (in a node, a method, the reranker or the
    compressor alike) read ``ctx.prompts``' replacements: one place, so no node or method passes
    the context to its templates. A context variable carries them, and the drivers copy it into
    every thread and task the body's calls run in (``rag_graphs.llm.calls``)."""
    return replacing(run_templates(ctx.prompts))


def model_node(body: NodeBody) -> ModelNode:
    """Decorator: ``body`` becomes a node (see ``ModelNode``)."""
    return ModelNode(body, body.__name__)
