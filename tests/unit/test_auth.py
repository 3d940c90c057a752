"""The LangGraph auth handler's parts: which user a request's key names, a bad users file refused
naming the file and the field (never the key), one identity one access, what access a user
carries, the owner stamp and filter that keep one user's threads and assistants from another, a
revoked user refused, and a thread's state written by its graph only."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
from langgraph_sdk import Auth

from rag_graphs.config.runtime import ContextRefused, caller_access
from rag_graphs.serve.auth import (
    INDEX_ASSISTANT,
    LOCAL,
    USERS,
    User,
    UsersFileError,
    api_key,
    authenticate,
    check_run,
    identify,
    load_users,
    own_assistants,
    own_namespace,
    owned,
    owner_only,
)

ALICE = {
    "identity": "alice",
    "tenant": "acme",
    "tags": ["hr"],
    "sources": ["/docs/a.md"],
    "search_filter": "page < 3",
}


@pytest.fixture
def users_file(tmp_path):
    path = tmp_path / "users.json"
    path.write_text(json.dumps({"key-alice": ALICE, "key-bob": {"identity": "bob"}}))
    return path


@pytest.mark.parametrize(
    "headers,key",
    [
        ({b"x-api-key": b"key-alice"}, "key-alice"),
        ({b"X-Api-Key": b" key-alice "}, "key-alice"),
        ({b"authorization": b"Bearer key-alice"}, "key-alice"),
        ({b"Authorization": b"bearer key-alice"}, "key-alice"),
        ({b"authorization": b"Basic a2V5"}, None),
        ({b"authorization": b"Bearer "}, None),
        ({}, None),
    ],
)
def test_the_key_comes_from_x_api_key_or_a_bearer_token(headers, key):
    assert api_key(headers) == key


def test_a_known_key_names_its_user_and_the_access_it_carries(users_file):
    alice = identify({b"x-api-key": b"key-alice"}, str(users_file))
    assert alice == User("alice", "acme", ("hr",), ("/docs/a.md",), "page < 3")
    assert identify({b"authorization": b"Bearer key-bob"}, str(users_file)) == User("bob")
    as_user = alice.as_user()
    assert (as_user["identity"], as_user["tenant"], as_user["tags"]) == ("alice", "acme", ["hr"])


@pytest.mark.parametrize("headers", [{}, {b"x-api-key": b"key-mallory"}, {b"authorization": b"Bearer alice"}])
def test_a_missing_or_unknown_key_is_401(users_file, headers):
    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        identify(headers, str(users_file))
    assert refused.value.status_code == 401


def test_without_a_users_file_every_request_is_the_local_user(users_file):
    assert identify({}, None) == identify({b"x-api-key": b"anything"}, "") == User(LOCAL)


def test_the_file_is_read_again_when_it_changes(users_file):
    assert identify({b"x-api-key": b"key-bob"}, str(users_file)).tenant is None
    users_file.write_text(json.dumps({"key-bob": {"identity": "bob", "tenant": "globex"}, "k2": ALICE}))
    os.utime(users_file, ns=(1, 1))  # a new modification time, whatever the clock's resolution
    assert identify({b"x-api-key": b"key-bob"}, str(users_file)).tenant == "globex"


@pytest.mark.parametrize(
    "content,where",
    [
        ("{not json", "not JSON"),
        ("[]", "must be a JSON object"),
        (json.dumps({"secret-key": "alice"}), "entry 1: must be an object"),
        (json.dumps({"secret-key": {"tenant": "acme"}}), "entry 1.identity"),
        (json.dumps({"k": ALICE, "secret-key": {"identity": "bob", "tags": "hr"}}), r"entry 2 \(bob\).tags"),
        (json.dumps({"secret-key": {"identity": "bob", "sources": [""]}}), r"entry 1 \(bob\).sources"),
        (json.dumps({"secret-key": {"identity": "bob", "tenant": 3}}), r"entry 1 \(bob\).tenant"),
        (
            json.dumps({"secret-key": {"identity": "bob", "tenants": ["a"]}}),
            r"entry 1 \(bob\).tenants: unknown",
        ),
        (
            json.dumps({"secret-key": {"identity": "bob", "search_filter": "a == 1) or (1 == 1"}}),
            "search_filter",
        ),
        (json.dumps({" ": {"identity": "bob"}}), "entry 1: the API key is empty"),
    ],
)
def test_a_bad_users_file_is_refused_naming_the_file_and_field_never_the_key(tmp_path, content, where):
    path = tmp_path / "users.json"
    path.write_text(content)
    with pytest.raises(UsersFileError, match=where) as refused:
        load_users(path)
    assert str(path) in str(refused.value) and "secret-key" not in str(refused.value)


def test_a_missing_users_file_names_the_variable_and_path(tmp_path):
    with pytest.raises(UsersFileError, match=f"{USERS}=.*nowhere.json: cannot read it"):
        identify({}, str(tmp_path / "nowhere.json"))


def test_the_authenticated_user_is_the_access_a_run_gets(users_file, monkeypatch):
    """What ``authenticate`` returns is what the server hands a run as ``langgraph_auth_user``."""
    monkeypatch.setenv(USERS, str(users_file))
    monkeypatch.delenv("RAG_GRAPHS_TENANT", raising=False)
    monkeypatch.delenv("RAG_GRAPHS_SEARCH_FILTER", raising=False)
    user = asyncio.run(authenticate({b"x-api-key": b"key-alice"}))
    access = caller_access({"configurable": {"langgraph_auth_user": user}})
    assert (access.identity, access.tenant, access.tags, access.sources) == (
        "alice",
        "acme",
        ("hr",),
        ("/docs/a.md",),
    )
    assert access.search_filter == "page < 3"


def test_a_bad_users_file_refuses_requests_with_a_500_not_the_files_content(tmp_path, monkeypatch):
    path = tmp_path / "users.json"
    path.write_text(json.dumps({"secret-key": {"identity": ""}}))
    monkeypatch.setenv(USERS, str(path))
    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        asyncio.run(authenticate({b"x-api-key": b"secret-key"}))
    assert refused.value.status_code == 500 and "secret" not in str(refused.value.detail)


def _ctx(action: str, identity: str = "alice", resource: str = "threads") -> SimpleNamespace:
    return SimpleNamespace(user=SimpleNamespace(identity=identity), action=action, resource=resource)


def _call(handler, ctx, value):
    return asyncio.run(handler(ctx, value))


def _matches(metadata: dict, filters: dict) -> bool:
    """The LangGraph server's metadata filter (equality, ``$or`` of groups), as its in-memory
    runtime applies a handler's filter to a thread's or an assistant's metadata."""
    groups = filters.get("$or")
    if groups is not None and not any(_matches(metadata, g) for g in groups):
        return False
    return all(metadata.get(k) == v for k, v in filters.items() if k != "$or")


@pytest.fixture
def served_users(users_file, monkeypatch):
    monkeypatch.setenv(USERS, str(users_file))
    return users_file


def test_one_identity_with_two_accesses_is_refused_naming_the_file_and_entries(tmp_path):
    """Attack round 4: two keys of ``alice``, one per tenant, shared one owner (their threads)."""
    path = tmp_path / "users.json"
    path.write_text(json.dumps({"k1": ALICE, "k2": {**ALICE, "tenant": "globex"}}))
    with pytest.raises(
        UsersFileError, match=r"entry 2 \(alice\): entry 1 names identity 'alice' with other"
    ) as e:
        load_users(path)
    assert str(path) in str(e.value) and "k2" not in str(e.value)
    path.write_text(json.dumps({"k1": ALICE, "k2": {**ALICE, "tags": list(ALICE["tags"])}}))  # a second key
    assert {u.identity for u in load_users(path).values()} == {"alice"}


def test_a_created_thread_or_run_is_stamped_with_its_owner_and_tenant_in_place():
    metadata = {"topic": "hr"}
    value = {"thread_id": None, "metadata": metadata}
    alice = User("alice", "acme")
    assert owned(alice, value) == {"owner": "alice", "owner_tenant": "acme"}
    assert metadata == {"topic": "hr", "owner": "alice", "owner_tenant": "acme"}  # the server keeps this dict
    bare: dict = {"thread_id": "t1"}
    owned(User("bob"), bare)
    assert bare["metadata"] == {"owner": "bob", "owner_tenant": ""}


def test_a_client_cannot_claim_another_owner():
    value = {"metadata": {"owner": "bob", "owner_tenant": "globex"}}
    assert (
        owned(User("alice", "acme"), value) == value["metadata"] == {"owner": "alice", "owner_tenant": "acme"}
    )


def test_one_identity_in_another_tenant_does_not_own_its_old_threads():
    thread = {"metadata": {}}
    owned(User("alice", "acme"), thread)
    assert not _matches(thread["metadata"], owned(User("alice", "globex"), {}))
    assert _matches(thread["metadata"], owned(User("alice", "acme"), {}))


def test_a_users_own_assistants_are_theirs_alone_the_served_ones_everyones(served_users):
    """Attack round 4: bob listed, read and ran alice's assistant (and saw it as an MCP tool)."""
    mine = {"graph_id": "naive", "metadata": {}}
    assert _call(own_assistants, _ctx("create", resource="assistants"), mine) == owned(
        User("alice", "acme"), {}
    )
    system = {"created_by": "system"}
    for action in ("read", "search"):
        alice = _call(own_assistants, _ctx(action, resource="assistants"), {"assistant_id": "a"})
        bob = _call(own_assistants, _ctx(action, "bob", resource="assistants"), {"assistant_id": "a"})
        assert _matches(mine["metadata"], alice) and not _matches(mine["metadata"], bob)
        assert _matches(system, alice) and _matches(system, bob)
    update = _call(own_assistants, _ctx("update", "bob", resource="assistants"), {"assistant_id": "a"})
    assert not _matches(mine["metadata"], update)


def test_no_assistant_of_the_indexing_graph_can_be_made(served_users):
    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        _call(own_assistants, _ctx("create", resource="assistants"), {"graph_id": "index", "metadata": {}})
    assert refused.value.status_code == 403


def test_a_threads_state_is_written_by_its_graph_only(served_users):
    """``threads.update_state`` (and the bulk update) reach the handler as an update without metadata."""
    with pytest.raises(Auth.exceptions.HTTPException, match="no state edits") as refused:
        _call(owner_only, _ctx("update"), {"thread_id": "t1"})
    assert refused.value.status_code == 403
    patch = {"thread_id": "t1", "metadata": {"topic": "hr"}}  # a metadata patch is still the owner's
    assert _call(owner_only, _ctx("update"), patch) == {"owner": "alice", "owner_tenant": "acme"}


NAIVE = "0e2a5d2a-0000-5000-8000-000000000000"


@pytest.mark.parametrize(
    "value,why",
    [
        ({"assistant_id": NAIVE, "kwargs": {"command": {"goto": "generate"}}}, "goto"),
        ({"assistant_id": NAIVE, "kwargs": {"command": {"update": {"hops": -99}}}}, "update"),
        ({"assistant_id": INDEX_ASSISTANT, "kwargs": {"interrupt_before": ["delete"]}}, "interrupt_before"),
        ({"assistant_id": INDEX_ASSISTANT, "kwargs": {"interrupt_after": "*"}}, "interrupt_after"),
        (
            {
                "assistant_id": INDEX_ASSISTANT,
                "kwargs": {"config": {"configurable": {"checkpoint_id": "c1"}}},
            },
            "checkpoint",
        ),
    ],
)
def test_a_run_may_not_steer_a_graph_past_its_nodes(value, why):
    with pytest.raises(Auth.exceptions.HTTPException, match=why) as refused:
        check_run(value)
    assert refused.value.status_code == 403


def test_a_resume_and_a_methods_interrupts_are_still_allowed():
    check_run(
        {"assistant_id": NAIVE, "kwargs": {"command": {"resume": "yes"}, "interrupt_before": ["generate"]}}
    )
    check_run({"assistant_id": INDEX_ASSISTANT, "kwargs": {"input": {"delete": ["text://a"]}}})


def test_the_indexing_assistant_id_is_the_servers():
    """The server derives a graph's own assistant id as ``uuid5(NAMESPACE_GRAPH, graph_id)`` (read
    from its source: importing ``langgraph_api.graph`` needs a server's configuration)."""
    spec = importlib.util.find_spec("langgraph_api")
    if spec is None or spec.origin is None:
        pytest.skip("the LangGraph server is not installed (extra 'langgraph-server')")
    source = (Path(spec.origin).parent / "graph.py").read_text()
    namespace = re.search(r'NAMESPACE_GRAPH = UUID\("([0-9a-f-]+)"\)', source)
    assert namespace, "langgraph_api.graph no longer names NAMESPACE_GRAPH"
    assert INDEX_ASSISTANT == str(uuid.uuid5(uuid.UUID(namespace.group(1)), "index"))


def test_a_revoked_users_cron_runs_are_refused(served_users):
    """A cron's runs are authorised as their creator by identity alone (the server's SimpleUser):
    once no key names that identity, neither the run nor its reads go ahead."""
    cron_run = {"assistant_id": NAIVE, "kwargs": {"input": {"question": "q"}}, "metadata": {}}
    assert _call(owner_only, _ctx("create_run"), dict(cron_run))["owner"] == "alice"
    served_users.write_text(json.dumps({"key-bob": {"identity": "bob"}}))  # alice's key removed
    os.utime(served_users, ns=(2, 2))
    with pytest.raises(Auth.exceptions.HTTPException, match="revoked") as refused:
        _call(owner_only, _ctx("create_run"), dict(cron_run))
    assert refused.value.status_code == 403


def test_a_runs_access_is_its_identitys_in_the_users_file_now(served_users, monkeypatch):
    """The server stores a cron's user as its identity alone: its runs used to read under the
    deployment's wider access, and a revoked user's run read on."""
    for name in ("RAG_GRAPHS_TENANT", "RAG_GRAPHS_TAGS", "RAG_GRAPHS_SOURCES", "RAG_GRAPHS_SEARCH_FILTER"):
        monkeypatch.delenv(name, raising=False)
    stored = {"configurable": {"langgraph_auth_user": {"identity": "alice"}}}
    assert caller_access(stored).tenant == "acme" and caller_access(stored).tags == ("hr",)
    served_users.write_text(json.dumps({"key-bob": {"identity": "bob"}}))
    os.utime(served_users, ns=(3, 3))
    with pytest.raises(ContextRefused, match="'alice' holds no key in RAG_GRAPHS_USERS now"):
        caller_access(stored)


def test_store_items_live_under_the_users_namespace():
    value = {"namespace": ("notes",)}
    asyncio.run(own_namespace(_ctx("put"), value))
    assert value["namespace"] == ("alice", "notes")
    mine = {"namespace": ("alice", "notes")}
    asyncio.run(own_namespace(_ctx("put"), mine))
    assert mine["namespace"] == ("alice", "notes")
