"""The running node's name, its reasoning-chain steps and its progress events on LangGraph's
``custom`` stream."""

from __future__ import annotations

from typing import Any

from langgraph.config import get_config, get_stream_writer

from rag_graphs.state import Step


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
