"""HippoRAG (Gutiérrez et al. 2024): one retrieval over the entity graph, then an answer.

    START -> retrieve (graph search) -> generate -> END

The multi-hop links live in the index, not in model-written queries: the
question's entities seed a Personalized PageRank over the chunk-entity graph
kept in Milvus (``rag_graphs.entity_graph.build``, built at ingest or by ``rag-graphs graph
build``), blended with the hybrid scores, so a passage that shares an entity
with the question's passages ranks without a second query. This is naive RAG
with ``search_mode="graph"``; every other method gets the same retrieval by
setting ``RagContext.search_mode="graph"`` (IRCoT + HippoRAG is one setting).

When it pays: multi-hop questions whose hops share entities, without model-written queries: the
entity graph links the passages; needs the entity graph (built at ingest).
Cost: one graph search (PageRank over the question's neighbourhood, no model call) and one model
call.
"""

from __future__ import annotations

import dataclasses

from langgraph.graph import StateGraph

from rag_graphs.config.context import RagContext
from rag_graphs.llm.calls import Body
from rag_graphs.nodes import generate
from rag_graphs.nodes.builder import compile_method, linear_builder
from rag_graphs.nodes.model_node import ModelNode
from rag_graphs.nodes.retrieve import retrieve_body
from rag_graphs.search.own import refuse_own_retriever
from rag_graphs.state import RagState


def graph_retrieve(state: RagState, ctx: RagContext) -> Body[dict]:
    """The shared retrieve step with graph search, whatever the context's search mode."""
    refuse_own_retriever(ctx, "the hipporag method (graph search over the store's entity graph)")
    return (yield from retrieve_body(state, dataclasses.replace(ctx, search_mode="graph")))


def build() -> StateGraph:
    """The uncompiled graph."""
    return linear_builder(("retrieve", ModelNode(graph_retrieve, "retrieve")), ("generate", generate))


graph = compile_method(build(), "hipporag")
