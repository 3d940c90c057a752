"""One module per method; each exposes ``build()`` and a compiled ``graph`` (wired with
``rag_graphs.nodes.builder``); ``get_graph`` finds one by name.

May import nodes, the ``rag_graphs`` core, ``ingestion`` and ``prompts``; never run, eval or the
commands.
"""

from __future__ import annotations

import importlib
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import RetryPolicy

from rag_graphs.catalog import METHODS
from rag_graphs.nodes.builder import compile_method


def get_graph(
    method: str,
    *,
    checkpointer: BaseCheckpointSaver | None = None,
    retry_policy: RetryPolicy | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The compiled graph of ``method`` (module ``rag_graphs.methods.<method>``).

    With a ``checkpointer`` (``InMemorySaver``, ``SqliteSaver``...), a fresh
    compilation that saves every step under the caller's ``thread_id``; the
    shared module-level graph carries none, as LangGraph Server expects. A
    ``retry_policy`` replaces ``rag_graphs.nodes.failures.RETRY`` (attempts, backoff); its
    ``retry_on`` sees the failing node's ``RunFailed``, so build it on
    ``rag_graphs.nodes.failures.retryable``.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; available: {', '.join(METHODS)}")
    module = importlib.import_module(f"rag_graphs.methods.{method}")
    if checkpointer is None and retry_policy is None:
        return module.graph
    return compile_method(module.build(), method, checkpointer=checkpointer, retry_policy=retry_policy)
