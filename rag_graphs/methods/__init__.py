"""One module per method; each exposes ``build()`` and a compiled ``graph``."""

from __future__ import annotations

import importlib

from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph

from rag_graphs.context import RagContext
from rag_graphs.state import InputState, OutputState, RagState

METHODS: dict[str, str] = {
    "naive": "one retrieval with the question, then an answer with citations",
    "fixed_step": "a fixed number of hops: query, retrieve, intermediate answer, next query",
    "iterative": "retrieve until the model judges the information enough (bounded, no repeats)",
    "react": "ReAct: an agent that calls search and calculator tools (native tool calls or a text protocol)",
    "ircot": "IRCoT: each chain-of-thought sentence becomes the next retrieval query",
    "self_rag": "Self-RAG: decide to retrieve, grade passages, check the answer, retry when unsupported",
    "crag": "Corrective RAG: grade passages, rewrite and search again when none is correct",
}
"""Method name -> one-line description, in the order they are usually compared."""


def get_graph(method: str) -> CompiledStateGraph:
    """The compiled graph of ``method`` (module ``rag_graphs.methods.<method>``)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; available: {', '.join(METHODS)}")
    return importlib.import_module(f"rag_graphs.methods.{method}").graph


def new_builder(state: type = RagState) -> StateGraph:
    """An empty graph with the shared state (or a method's extension of it), the one
    input/output contract and ``RagContext``."""
    return StateGraph(state, context_schema=RagContext, input_schema=InputState, output_schema=OutputState)
