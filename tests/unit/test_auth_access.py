"""A served run's access is its deployment's, narrowed by its authenticated user's, then by its
client's: what the LangGraph server names as the caller (``langgraph_auth_user``) bounds every
search, and no context a client sends lifts that bound."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rag_graphs.config.runtime import Access, ContextRefused, caller_access, get_context

ALICE = {"identity": "alice", "tenant": "acme", "tags": ["hr"], "sources": [], "search_filter": None}


def _config(user: object) -> dict:
    return {"configurable": {"langgraph_auth_user": user}}


def _runtime(context: object, user: object) -> SimpleNamespace:
    """What LangGraph hands a node of a served run: the client's context, the server's user."""
    return SimpleNamespace(context=context, server_info=SimpleNamespace(user=user))


class ProxyLike:
    """The server's user object: attributes plus a ``dict()`` of the handler's fields."""

    identity = "alice"

    def dict(self) -> dict:
        return dict(ALICE)


@pytest.fixture(autouse=True)
def served(monkeypatch):
    monkeypatch.setenv("RAG_GRAPHS_SERVED", "1")
    for name in ("RAG_GRAPHS_TENANT", "RAG_GRAPHS_TAGS", "RAG_GRAPHS_SOURCES", "RAG_GRAPHS_SEARCH_FILTER"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("source", [_config(ALICE), _config(ProxyLike()), _runtime(None, ProxyLike())])
def test_the_callers_access_comes_from_the_servers_user(source):
    assert caller_access(source) == Access(identity="alice", tenant="acme", tags=("hr",))


def test_without_a_user_the_caller_has_the_deployments_access(monkeypatch):
    monkeypatch.setenv("RAG_GRAPHS_TENANT", "acme")
    monkeypatch.setenv("RAG_GRAPHS_SEARCH_FILTER", 'kind != "table"')
    assert caller_access(None) == Access(tenant="acme", search_filter='kind != "table"')
    assert caller_access(_config(None)) == caller_access({}) == caller_access(None)


def test_a_user_narrows_the_deployment_and_its_filter_is_anded(monkeypatch):
    monkeypatch.setenv("RAG_GRAPHS_TAGS", "hr,public")
    monkeypatch.setenv("RAG_GRAPHS_SEARCH_FILTER", 'kind != "table"')
    access = caller_access(_config({**ALICE, "search_filter": "page < 3"}))
    assert access.tags == ("hr",)
    assert access.search_filter == '(kind != "table") and (page < 3)'


def test_a_user_wider_than_the_deployment_is_refused_naming_user_and_field(monkeypatch):
    monkeypatch.setenv("RAG_GRAPHS_TENANT", "globex")
    with pytest.raises(ContextRefused, match=r"user 'alice'.*RagContext.tenant='acme'"):
        caller_access(_config(ALICE))


@pytest.mark.parametrize(
    "sent",
    [{"tenant": None}, {}, {"tags": []}, {"search_filter": 'tenant == "globex" or 1 == 1'}],
)
def test_a_client_cannot_lift_its_users_access(sent):
    ctx = get_context(_runtime(sent, ALICE))
    assert (ctx.tenant, ctx.tags) == ("acme", ("hr",))


@pytest.mark.parametrize(
    "sent,field",
    [({"tenant": "globex"}, "tenant"), ({"tags": ["secret"]}, "tags"), ({"tags": ["hr", "x"]}, "tags")],
)
def test_a_client_widening_its_users_access_is_refused(sent, field):
    with pytest.raises(ContextRefused, match=f"RagContext.{field}=.*user 'alice' reads"):
        get_context(_runtime(sent, ALICE))


def test_a_client_may_narrow_a_user_without_labels():
    ctx = get_context(_runtime({"tenant": "acme", "k": 3}, {"identity": "local"}))
    assert (ctx.tenant, ctx.k) == ("acme", 3)
