"""A served run's access is its deployment's: a client's JSON context may narrow it, never widen it.

The LangGraph server and Studio send a run's context as JSON. With the deployment's environment
naming tenant ``acme``, a client that sent ``{"tenant": null}``, ``{"tenant": "globex"}`` or a filter
naming globex read globex's passages, and a client-set web search endpoint made the server fetch a
URL on its own loopback (attack round 3). The JSON now meets the deployment's settings first.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

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
