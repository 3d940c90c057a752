from __future__ import annotations

import pytest

from rag_graphs.context import RagContext, get_context


def test_defaults_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("RAG_GRAPHS_K", "7")
    monkeypatch.setenv("RAG_GRAPHS_CHAT_MODEL", "ollama:qwen3:8b")
    monkeypatch.setenv("RAG_GRAPHS_STORE_URI", "http://localhost:19530")
    ctx = RagContext()
    assert (ctx.k, ctx.chat_model, ctx.store_uri) == (7, "ollama:qwen3:8b", "http://localhost:19530")


def test_explicit_values_beat_the_environment(monkeypatch):
    monkeypatch.setenv("RAG_GRAPHS_K", "7")
    assert RagContext(k=2).k == 2


def test_bad_environment_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("RAG_GRAPHS_MAX_HOPS", "many")
    with pytest.raises(ValueError, match="RAG_GRAPHS_MAX_HOPS"):
        RagContext()


@pytest.mark.parametrize("field,value", [("k", 0), ("max_hops", -1), ("search_mode", "sparse")])
def test_invalid_settings_are_rejected_with_the_field_name(field, value):
    with pytest.raises(ValueError, match=field):
        RagContext(**{field: value})


def test_get_context_accepts_dicts_and_missing_context():
    class Runtime:
        context = {"k": 3}

    assert get_context(Runtime()).k == 3
    assert get_context(object()).k == RagContext().k


def test_every_graph_publishes_json_schemas_for_langgraph_studio():
    """LangGraph Studio / the server build forms from these; a model instance field must not break them."""
    import importlib
    import json
    from pathlib import Path

    from langgraph.graph.state import CompiledStateGraph

    from rag_graphs.methods import METHODS, get_graph

    root = Path(__file__).resolve().parents[2]
    listed = json.loads((root / "langgraph.json").read_text())["graphs"]
    assert set(listed) == set(METHODS)
    for name, entry in listed.items():
        # What `langgraph dev` loads: the file's variable, a compiled graph without a checkpointer.
        path, variable = entry.split(":")
        assert (root / path).resolve() == (root / "rag_graphs" / "methods" / f"{name}.py").resolve()
        graph = getattr(importlib.import_module(f"rag_graphs.methods.{name}"), variable)
        assert isinstance(graph, CompiledStateGraph) and graph.checkpointer is None
        assert graph is get_graph(name)
        assert graph.get_input_jsonschema()["required"] == ["question"]
        assert set(graph.get_output_jsonschema()["properties"]) == {
            "answer",
            "citations",
            "documents",
            "steps",
            "usage",
            "stop_reason",
        }
        context = graph.get_context_jsonschema()["properties"]
        assert context["chat_model"]["type"] == "string" and context["k"]["type"] == "integer"
