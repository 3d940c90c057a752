"""LangSmith tracing of a graph run, recorded by a local stand-in for the LangSmith API (no network)."""

from __future__ import annotations

import json

import pytest

from rag_graphs.catalog import METHODS
from rag_graphs.config.tracing import trace_config
from rag_graphs.methods import get_graph

QUESTION = "Where was Ilsa Brandt born?"


def _runs(received) -> dict[str, dict]:
    """The runs the client created (``auto_batch_tracing=False``: one JSON ``POST /runs`` each), by name."""
    runs = {}
    for method, path, body in received:
        if method == "POST" and path.rstrip("/") == "/runs":
            run = json.loads(body)
            runs[run["name"]] = run
    return runs


def test_a_traced_run_is_one_tree_of_nodes_model_calls_and_searches(loaded, make_context, standin):
    from langsmith import Client
    from langsmith.run_helpers import tracing_context

    url, received = standin
    client = Client(api_url=url, api_key="test-key", auto_batch_tracing=False)
    ctx = make_context("Korvik [1].", k=2)
    with tracing_context(enabled=True, client=client, project_name="rag-graphs-test"):
        out = get_graph("naive").invoke(
            {"question": QUESTION}, context=ctx, config=trace_config(ctx, "naive")
        )
    client.flush()
    assert out["answer"] == "Korvik [1]."
    by_name = _runs(received)
    root = by_name["naive"]
    assert root.get("parent_run_id") is None
    assert {"retrieve", "generate", "ChunkRetriever", "GenericFakeChatModel"} <= set(by_name)
    assert {r["trace_id"] for r in by_name.values()} == {root["trace_id"]}  # one trace
    meta = root["extra"]["metadata"]
    assert (
        meta["method"] == "naive"
        and meta["collection"] == "test"
        and meta["chat_model"] == "GenericFakeChatModel"
        and meta["search_mode"] == "auto"  # what was asked
    )
    assert {"rag-graphs", "method:naive"} <= set(root["tags"])
    search = by_name["ChunkRetriever"]
    assert search["run_type"] == "retriever" and search["extra"]["metadata"]["collection"] == "test"
    assert search["extra"]["metadata"]["search_mode"] == "graph"  # what ran: ingest built the graph
    assert by_name["GenericFakeChatModel"]["run_type"] == "llm"


@pytest.mark.parametrize("method", list(METHODS))
def test_every_compiled_graph_names_its_method_in_metadata_and_tags(method):
    config = get_graph(method).config
    assert config["metadata"]["method"] == method and f"method:{method}" in config["tags"]
