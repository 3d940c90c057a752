"""One module per method; each exposes ``build()`` and a compiled ``graph``."""

from __future__ import annotations

import importlib

from langgraph.graph.state import CompiledStateGraph

METHODS: tuple[str, ...] = ("naive",)


def get_graph(method: str) -> CompiledStateGraph:
    """The compiled graph of ``method`` (module ``rag_graphs.methods.<method>``)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; available: {', '.join(METHODS)}")
    return importlib.import_module(f"rag_graphs.methods.{method}").graph
