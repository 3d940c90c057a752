"""The LangGraph auth handler's pure parts: which user a request's key names, a bad users file
refused naming the file and the field (never the key), what access a user carries, and the owner
stamp and filter that keep one user's threads from another."""

from __future__ import annotations

import asyncio
import json
import os
from types import SimpleNamespace

import pytest
from langgraph_sdk import Auth

from rag_graphs.config.runtime import caller_access
from rag_graphs.serve.auth import (
    LOCAL,
    USERS,
    User,
    UsersFileError,
    api_key,
    authenticate,
    identify,
    load_users,
    own_namespace,
    owned,
    shared_assistants,
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


def _ctx(action: str, identity: str = "alice") -> SimpleNamespace:
    return SimpleNamespace(user=SimpleNamespace(identity=identity), action=action, resource="threads")


def test_a_created_thread_or_run_is_stamped_with_its_owner_in_place():
    metadata = {"topic": "hr"}
    value = {"thread_id": None, "metadata": metadata}
    assert owned("alice", value) == {"owner": "alice"}
    assert metadata == {"topic": "hr", "owner": "alice"}  # the server keeps using this dict
    bare: dict = {"thread_id": "t1"}
    owned("bob", bare)
    assert bare["metadata"] == {"owner": "bob"}


def test_a_client_cannot_claim_another_owner():
    value = {"metadata": {"owner": "bob"}}
    assert owned("alice", value) == {"owner": "alice"} and value["metadata"]["owner"] == "alice"


def test_the_served_assistants_are_everyones_to_read_but_writes_are_owned():
    assert asyncio.run(shared_assistants(_ctx("search"), {"graph_id": "naive"})) is None
    assert asyncio.run(shared_assistants(_ctx("read"), {"assistant_id": "a"})) is None
    assert asyncio.run(shared_assistants(_ctx("update"), {"assistant_id": "a"})) == {"owner": "alice"}


def test_store_items_live_under_the_users_namespace():
    value = {"namespace": ("notes",)}
    asyncio.run(own_namespace(_ctx("put"), value))
    assert value["namespace"] == ("alice", "notes")
    mine = {"namespace": ("alice", "notes")}
    asyncio.run(own_namespace(_ctx("put"), mine))
    assert mine["namespace"] == ("alice", "notes")
