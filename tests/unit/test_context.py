from __future__ import annotations

import dataclasses
import re

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel

from rag_graphs.config.context import RagContext
from rag_graphs.config.graph_search import GraphSearchOptions
from rag_graphs.config.runtime import get_context


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


@pytest.mark.parametrize(
    "field,value,why",
    [
        ("k", 0, "greater than or equal to 1"),
        ("max_hops", -1, "greater than or equal to 1"),
        ("num_demos", -1, "greater than or equal to 0"),
        ("search_mode", "sparse", "'dense', 'hybrid' or 'graph'"),
        ("first_hop_weight", float("inf"), "finite number"),
        ("first_hop_weight", 1e308, "less than or equal to 100"),
        ("tool_calling", "json", "'auto', 'native' or 'text'"),
        ("tenant", 3, "valid string"),
        ("chat_model", 3, "str"),
    ],
)
def test_invalid_settings_are_rejected_with_the_field_name(field, value, why):
    with pytest.raises(ValueError, match=field) as error:
        RagContext(**{field: value})
    assert f"RagContext.{field}={value!r}: " in str(error.value) and why in str(error.value)


def test_a_bad_environment_value_is_checked_by_the_field_type(monkeypatch):
    monkeypatch.setenv("RAG_GRAPHS_SEARCH_MODE", "sparse")
    with pytest.raises(ValueError, match="RagContext.search_mode='sparse'.*RAG_GRAPHS_SEARCH_MODE"):
        RagContext()
    assert RagContext(search_mode="dense").search_mode == "dense"  # a passed value does not read it
    monkeypatch.setenv("RAG_GRAPHS_GRAPH_DAMPING", "0.25")
    monkeypatch.setenv("RAG_GRAPHS_TAGS", "public, hr,")
    ctx = RagContext(search_mode="dense")
    assert (ctx.graph_search.damping, ctx.tags) == (0.25, ("public", "hr"))


@pytest.mark.parametrize(
    "option,value,why",
    [
        ("damping", 1.5, "less than or equal to 1"),
        ("title_weight", float("inf"), "finite number"),
        ("title_weight", 1e308, "less than or equal to 100"),
        ("title_weight", 0.5, "greater than or equal to 1"),
    ],
)
def test_graph_search_options_are_checked_and_named(monkeypatch, option, value, why):
    """Graph search's settings are one typed object (``RagContext.graph_search``): a wrong option
    is named as ``RagContext.graph_search.<option>``, passed as an object, as JSON or from its
    ``RAG_GRAPHS_GRAPH_<OPTION>`` variable; numeric weights are finite and bounded (an infinite
    title weight used to be accepted)."""
    with pytest.raises(ValueError, match=why):
        GraphSearchOptions(**{option: value})
    with pytest.raises(ValueError) as error:
        RagContext(graph_search={option: value})
    assert f"RagContext.graph_search.{option}={value!r}: " in str(error.value) and why in str(error.value)
    monkeypatch.setenv(f"RAG_GRAPHS_GRAPH_{option.upper()}", str(value))
    with pytest.raises(ValueError) as error:
        RagContext()
    assert f"RAG_GRAPHS_GRAPH_{option.upper()}" in str(error.value) and why in str(error.value)
    monkeypatch.delenv(f"RAG_GRAPHS_GRAPH_{option.upper()}")
    assert RagContext(graph_search={"damping": 0.5}).graph_search == GraphSearchOptions(damping=0.5)


def test_settings_are_keyword_only_and_misspelt_ones_are_errors():
    with pytest.raises(ValueError, match="keyword arguments only"):
        RagContext(3)  # type: ignore[misc]
    with pytest.raises(ValueError, match="RagContext.kk=3: Unexpected keyword argument"):
        RagContext(kk=3)  # type: ignore[call-arg]


def test_assignments_are_checked_too():
    ctx = RagContext()
    with pytest.raises(ValueError, match=re.escape("RagContext.k=0: ")):
        ctx.k = 0
    ctx.routes = "single_hop=hyde"  # type: ignore[assignment]
    assert ctx.routes == {"single_hop": "hyde"}
    assert dataclasses.replace(ctx, search_mode="graph").search_mode == "graph"


def test_labels_take_one_string_many_or_none():
    assert RagContext(tags="a, b").tags == ("a, b",)  # one label, not letters, not split
    assert RagContext(tags=["a", "b"], sources=None).tags == ("a", "b")
    assert RagContext(sources=None).sources == ()
    with pytest.raises(ValueError, match=re.escape("RagContext.tags[1]='': String should have at least 1")):
        RagContext(tags=["a", ""])


def test_ready_models_and_tools_are_accepted_as_they_are():
    chat, embeddings = GenericFakeChatModel(messages=iter([])), DeterministicFakeEmbedding(size=4)
    ctx = RagContext(chat_model=chat, embeddings=embeddings)
    assert ctx.chat_model is chat and ctx.embeddings is embeddings
    with pytest.raises(ValueError, match="RagContext.web_search='bing': unknown web search"):
        RagContext(web_search="bing")


def test_routes_is_a_mapping_from_a_dict_or_the_string_form(monkeypatch):
    assert RagContext().routes == {
        "single_hop": "naive",
        "multi_hop": "ircot",
        "global_summary": "graphrag",
    }
    assert RagContext(routes={"multi_hop": "iterdrag"}).routes == {"multi_hop": "iterdrag"}
    as_string = RagContext(routes=" single_hop = naive , multi_hop=fixed_step,")  # type: ignore[arg-type]
    assert as_string.routes == {"single_hop": "naive", "multi_hop": "fixed_step"}
    monkeypatch.setenv("RAG_GRAPHS_ROUTES", "multi_hop=decomposition")
    assert RagContext().routes == {"multi_hop": "decomposition"}


@pytest.mark.parametrize(
    "routes,message",
    [
        ("weird=naive", "RagContext.routes: unknown question kind(s) ['weird']; use single_hop, multi_hop"),
        ({"no_retrieval": "naive"}, "unknown question kind(s) ['no_retrieval']"),
        ("multi_hop=nope", "RagContext.routes: multi_hop='nope' is not a method; available: naive, "),
        ({"multi_hop": "auto"}, "RagContext.routes: multi_hop='auto' is not a method"),  # no loop
        ("multi_hop", "RagContext.routes: 'multi_hop' is not 'kind=method'"),
        ({"multi_hop": 1}, "RagContext.routes={'multi_hop': 1}: expected question kind -> method name"),
    ],
)
def test_routes_to_unknown_kinds_or_methods_are_rejected(routes, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        RagContext(routes=routes)


def test_a_route_changed_in_place_is_checked_when_used():
    from rag_graphs.methods.auto import chosen_method

    ctx = RagContext(routes={"multi_hop": "ircot"})
    assert (chosen_method("multi_hop", ctx), chosen_method("global_summary", ctx)) == ("ircot", "naive")
    ctx.routes["multi_hop"] = "auto"
    with pytest.raises(ValueError, match="RagContext.routes: multi_hop='auto' is not a method"):
        chosen_method("multi_hop", ctx)


def test_env_vars_lists_every_setting():
    env = RagContext.env_vars()
    assert env["k"] == "RAG_GRAPHS_K" and env["web_search"] == "RAG_GRAPHS_WEB_SEARCH"
    python_only = {"retriever"}  # an object (the user's own retriever or vector store): no env form
    nested = {"graph_search"}  # an options object: each option has its own variable
    options = {f"graph_search.{f.name}" for f in dataclasses.fields(GraphSearchOptions)}
    assert set(env) == {f.name for f in dataclasses.fields(RagContext)} - python_only - nested | options
    assert env["graph_search.damping"] == "RAG_GRAPHS_GRAPH_DAMPING"


def test_get_context_accepts_dicts_and_missing_context_when_opted_in(monkeypatch):
    class Runtime:
        context = {"k": 3, "routes": {"multi_hop": "hyde"}}

    assert get_context(Runtime()).k == 3 and get_context(Runtime()).routes == {"multi_hop": "hyde"}
    monkeypatch.setenv("RAG_GRAPHS_ENV_DEFAULTS", "1")
    assert get_context(object()).k == RagContext().k


def test_every_graph_publishes_json_schemas_for_langgraph_studio():
    """LangGraph Studio / the server build forms from these; a model instance field must not break them."""
    import importlib
    import json
    from pathlib import Path

    from langgraph.graph.state import CompiledStateGraph

    from rag_graphs.catalog import METHODS
    from rag_graphs.methods import get_graph

    root = Path(__file__).resolve().parents[2]
    listed = json.loads((root / "langgraph.json").read_text())["graphs"]
    listed = {name: entry["path"] for name, entry in listed.items()}  # the dict form: descriptions too
    index = listed.pop("index")  # the indexing graph, served beside the methods (serve/indexing.py)
    assert index == "./rag_graphs/serve/indexing.py:graph"
    indexing = importlib.import_module("rag_graphs.serve.indexing").graph
    assert isinstance(indexing, CompiledStateGraph) and indexing.checkpointer is None
    assert indexing.get_input_jsonschema()["properties"] and indexing.get_output_jsonschema()["properties"]
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
            "outcome",
            "confidence",
        }
        context = graph.get_context_jsonschema()["properties"]
        assert context["chat_model"]["type"] == "string" and context["k"]["type"] == "integer"
        assert context["k"]["minimum"] == 1 and context["search_mode"]["enum"] == [
            "auto",
            "dense",
            "hybrid",
            "graph",
        ]
        assert "Chunks returned per retrieval" in context["k"]["description"]  # the field's docstring
        assert {"type": "object", "additionalProperties": {"type": "string"}} in context["routes"]["anyOf"]


def test_langgraph_coerces_a_context_dict_and_checks_it():
    """``langgraph dev`` / the server pass the context as JSON; LangGraph builds RagContext from it."""
    from rag_graphs.methods import get_graph

    graph = get_graph("naive")
    with pytest.raises(ValueError, match=re.escape("RagContext.k=0: ")):
        graph.invoke({"question": "q"}, context={"k": 0})
