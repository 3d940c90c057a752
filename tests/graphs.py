"""Stored state a method needs before it can run, for tests that run every method."""

from __future__ import annotations

import itertools

from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from rag_graphs.entity_graph.build import build_graph
from rag_graphs.ingestion.community_reports import build_reports
from rag_graphs.ingestion.raptor import build_tree
from rag_graphs.llm.structured import invoke_structured
from rag_graphs.store import ChunkIndex
from tests.entities import capitalised


def summariser() -> GenericFakeChatModel:
    """A RAPTOR summariser that writes the same summary of every cluster."""
    return GenericFakeChatModel(messages=itertools.cycle([AIMessage(content="A summary of the passages.")]))


def prepare(index: ChunkIndex, method: str) -> None:
    """Build what ``method`` reads besides the chunks: RAPTOR's tree, HippoRAG's entity graph
    (graph search on a collection without one is a ``SetupError``), GraphRAG's entity graph and
    community reports."""
    if method == "raptor":
        build_tree(index, summariser(), progress=False)
    elif method in ("hipporag", "graphrag"):
        build_graph(index, capitalised, progress=False)
    if method == "graphrag":
        build_reports(index, summariser(), ask=invoke_structured, progress=False)
