"""A served run's access is its deployment's: a client's JSON context may narrow it, never widen it.

The LangGraph server and Studio send a run's context as JSON. With the deployment's environment
naming tenant ``acme``, a client that sent ``{"tenant": null}``, ``{"tenant": "globex"}`` or a filter
naming globex read globex's passages, and a client-set web search endpoint made the server fetch a
URL on its own loopback (attack round 3). The JSON now meets the deployment's settings first, and
its cost knobs the deployment's caps (attack round 4).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rag_graphs.config.caps import CAPS, DEFAULT_CAPS, CapsError, value_of
from rag_graphs.config.context import RagContext
from rag_graphs.config.runtime import ContextRefused, get_context
from rag_graphs.methods import get_graph
from rag_graphs.store.filters import search_expr


def _served(sent: dict) -> RagContext:
    return get_context(SimpleNamespace(context=sent))


@pytest.fixture(autouse=True)
def served(monkeypatch):
    monkeypatch.setenv("RAG_GRAPHS_SERVED", "1")


@pytest.fixture
def acme(monkeypatch):
    monkeypatch.setenv("RAG_GRAPHS_TENANT", "acme")
    monkeypatch.setenv("RAG_GRAPHS_TAGS", "public,hr")
    monkeypatch.setenv("RAG_GRAPHS_SEARCH_FILTER", 'kind != "table"')


def test_a_null_tenant_does_not_lift_the_deployments(acme):
    assert _served({"tenant": None}).tenant == "acme"
    assert _served({}).tenant == "acme"


@pytest.mark.parametrize(
    "sent,field",
    [
        ({"tenant": "globex"}, "tenant"),
        ({"tags": ["secret"]}, "tags"),
        ({"tags": ["public", "secret"]}, "tags"),
        ({"web_search": "searxng:http://127.0.0.1:9"}, "web_search"),
        ({"store_uri": "/tmp/other.db"}, "store_uri"),
        ({"collection": "globex_docs"}, "collection"),
        ({"chat_model": "openai:gpt-4.1-mini"}, "chat_model"),
        ({"demonstrations": "/etc/passwd"}, "demonstrations"),
    ],
)
def test_a_widening_or_a_service_is_refused_naming_the_field(acme, sent, field):
    with pytest.raises(ContextRefused, match=f"RagContext.{field}"):
        _served(sent)


def test_a_client_filter_is_combined_with_the_deployments(acme):
    ctx = _served({"search_filter": 'tenant == "globex" or 1 == 1', "tags": ["hr"]})
    expr = search_expr(ctx)
    assert ctx.tags == ("hr",) and ctx.tenant == "acme"
    assert expr is not None and '(kind != "table")' in expr and 'tenant == "acme"' in expr
    assert expr.startswith('((kind != "table") and (tenant == "globex" or 1 == 1)) and ')  # never ORed


def test_without_deployment_access_a_client_may_restrict(monkeypatch):
    ctx = _served({"tenant": "globex", "k": 3})
    assert (ctx.tenant, ctx.k) == ("globex", 3)


def test_a_served_graph_run_narrows_what_langgraph_made_of_the_json(loaded, monkeypatch, fake_embeddings):
    """Through a compiled graph, as the server runs it: LangGraph makes the JSON a ``RagContext``
    before any node sees it, so the narrowing reads what differs from the deployment."""
    monkeypatch.setenv("RAG_GRAPHS_TENANT", "acme")
    graph = get_graph("naive")
    with pytest.raises(ContextRefused, match="RagContext.tenant='globex'"):
        graph.invoke({"question": "Where is Korvik?"}, context={"tenant": "globex"})
    with pytest.raises(ContextRefused, match="RagContext.web_search"):
        graph.invoke({"question": "Where is Korvik?"}, context={"web_search": "searxng:http://127.0.0.1:9"})
    nulled = RagContext(tenant=None, embeddings=fake_embeddings)  # as LangGraph builds ``{"tenant": null}``
    with pytest.raises(ContextRefused, match="RagContext.embeddings"):
        _served(nulled)  # an object (not JSON) naming its own model is refused too
    assert get_context(SimpleNamespace(context=RagContext(tenant=None))).tenant == "acme"


def test_off_a_server_a_callers_context_is_trusted(monkeypatch):
    monkeypatch.delenv("RAG_GRAPHS_SERVED")
    monkeypatch.setenv("RAG_GRAPHS_TENANT", "acme")
    assert _served({"tenant": "globex"}).tenant == "globex"


def _over(name: str, value: int) -> dict:
    """A client's context setting capped field ``name`` (``graph_search.seeds``: nested)."""
    head, _, option = name.partition(".")
    return {head: {option: value}} if option else {name: value}


@pytest.mark.parametrize("name", sorted(DEFAULT_CAPS))
def test_a_cost_knob_above_the_deployments_cap_is_refused_naming_field_and_cap(name, monkeypatch):
    """Attack round 4: ``num_queries=2000`` gave 2,000 searches and 2,001 model calls in one run;
    every cost knob was accepted up to its global maximum."""
    monkeypatch.delenv(CAPS, raising=False)
    cap = DEFAULT_CAPS[name]
    with pytest.raises(
        ContextRefused, match=rf"RagContext.{name}={cap + 1}: this deployment allows at most {cap}"
    ):
        _served(_over(name, cap + 1))
    assert value_of(_served(_over(name, cap)), name) == cap  # up to the cap: the client's to choose
    assert value_of(_served(_over(name, 1)), name) == 1


def test_the_deployment_sets_its_caps_and_its_own_values_stay_allowed(monkeypatch):
    monkeypatch.setenv(CAPS, '{"num_queries": 5, "graph_search.neighbourhood": 500, "k": null}')
    with pytest.raises(ContextRefused, match=r"num_queries=6: .* at most 5 \(its cap in RAG_GRAPHS_CAPS\)"):
        _served({"num_queries": 6})
    with pytest.raises(ContextRefused, match="graph_search.neighbourhood=501"):
        _served({"graph_search": {"neighbourhood": 501}})
    assert _served({"k": 5000}).k == 5000  # null: no cap of the deployment's own
    monkeypatch.setenv("RAG_GRAPHS_MAX_HOPS", "20")  # the deployment's own value above the cap
    assert _served({}).max_hops == _served({"max_hops": 20}).max_hops == 20
    with pytest.raises(ContextRefused, match=r"max_hops=21: .* at most 20 \(its own setting\)"):
        _served({"max_hops": 21})


@pytest.mark.parametrize(
    "raw,says",
    [
        ("{not json", "not JSON"),
        ("[1]", "must be a JSON object"),
        ('{"rrf_k": 10}', "'rrf_k' has no cap"),
        ('{"k": 0}', "k=0: a cap is a whole number"),
        ('{"k": "8"}', "k='8'"),
    ],
)
def test_a_bad_caps_setting_is_one_line_naming_the_variable(monkeypatch, raw, says):
    monkeypatch.setenv(CAPS, raw)
    with pytest.raises(CapsError, match=f"RAG_GRAPHS_CAPS: .*{says}"):
        _served({"k": 2})


def test_the_process_search_cache_is_the_deployments(monkeypatch):
    """``search_cache`` sizes the one cache all clients share: a client set it to a billion."""
    with pytest.raises(ContextRefused, match="RagContext.search_cache"):
        _served({"search_cache": 10**9})


def test_a_served_graph_refuses_a_costly_context_before_any_model_call():
    graph = get_graph("multi_query")
    with pytest.raises(ContextRefused, match="RagContext.num_queries=2000"):
        graph.invoke({"question": "Where is Korvik?"}, context={"num_queries": 2000})
