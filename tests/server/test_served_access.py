"""Per-user and per-deployment access through a real ``langgraph dev`` (issue 39 item 2, issue 40
item 1): what a run reads is bounded by the server's environment and the caller's user, whatever
context the client sends, and one user's threads are invisible to another.

One server for the module: its environment names tenant ``acme``; its users file
(``RAG_GRAPHS_USERS``) holds alice (acme, tag ``a``), bob (acme, tag ``b``) and carol (no access
of her own: the deployment's). The store holds a canary per reader: alice's (acme, ``a``),
bob's (acme, ``b``) and globex's (tenant globex, tags ``a`` and ``b``, so only the tenant keeps
it out). Every run asks ``naive`` for more passages than the store holds, so a canary missing
from a run's output was filtered out, not outranked.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from tests.server.langgraph_server import Batch, build_store, langgraph_server, scripted_chat, served_env

pytestmark = pytest.mark.server

CANARIES = {
    "alice": ("acme", ["a"], "ALPHA-ORCHID-7731"),
    "bob": ("acme", ["b"], "BRAVO-LANTERN-5520"),
    "globex": ("globex", ["a", "b"], "GLOBEX-OMEGA-9902"),
}
KEYS = {"alice": "key-alice", "bob": "key-bob", "carol": "key-carol"}
QUESTION = "What is the vault code?"
CONTEXT = {"k": 8, "max_answer_tokens": 16}


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("served-access")
    batches = []
    for owner, (tenant, tags, canary) in CANARIES.items():
        doc = folder / "docs" / f"{owner}.md"
        doc.parent.mkdir(exist_ok=True)
        doc.write_text(f"# {owner} vault\n\nThe vault code of {owner} is {canary}.\n")
        batches.append(Batch([str(doc)], tenant=tenant, tags=tags))
    users = folder / "users.json"
    users.write_text(
        json.dumps(
            {
                KEYS["alice"]: {"identity": "alice", "tenant": "acme", "tags": ["a"]},
                KEYS["bob"]: {"identity": "bob", "tenant": "acme", "tags": ["b"]},
                KEYS["carol"]: {"identity": "carol"},
            }
        )
    )
    with scripted_chat() as chat:
        env = served_env(folder / "milvus.db", chat, RAG_GRAPHS_TENANT="acme")
        build_store(env, batches, raptor=False)
        with langgraph_server(folder, env={**env, "RAG_GRAPHS_USERS": str(users)}) as url:
            yield url


def client(url: str, who: str) -> SyncLangGraphClient:
    return get_sync_client(url=url, api_key=KEYS[who])  # sent as x-api-key


def read(out: dict) -> set[str]:
    """The canaries a run's output (its documents, answer, steps) shows."""
    text = json.dumps(out)
    assert "__error__" not in out, out
    return {owner for owner, (_, _, canary) in CANARIES.items() if canary in text}


def ask(url: str, who: str, context: dict, thread: str | None = None) -> dict:
    return client(url, who).runs.wait(
        thread, "naive", input={"question": QUESTION}, context={**CONTEXT, **context}
    )


def test_each_user_reads_their_own_passages_only(server):
    assert read(ask(server, "carol", {})) == {"alice", "bob"}  # the deployment's access: acme
    assert read(ask(server, "alice", {})) == {"alice"}
    assert read(ask(server, "bob", {})) == {"bob"}


WIDENING = (
    {"tenant": None},
    {"tags": []},
    {"tenant": None, "search_filter": 'tenant == "globex"'},
    {"search_filter": 'tenant == "globex" or 1 == 1'},
)
"""Contexts that used to lift the deployment's tenant (issue 40); one test loops over them: a
parametrized test split by xdist's work stealing would start a second server."""


def test_a_context_that_tries_to_widen_is_served_within_the_callers_access(server):
    for who, allowed in (("carol", {"alice", "bob"}), ("alice", {"alice"})):
        for sent in WIDENING:
            got = read(ask(server, who, sent))
            assert got <= allowed, (who, sent, got)
            if "search_filter" not in sent:  # nothing narrowed: all the caller may read, still found
                assert got == allowed, (who, sent, got)


def test_a_widening_or_a_service_is_refused_naming_the_field(server):
    for who, sent, field in (
        ("carol", {"tenant": "globex"}, "tenant"),
        ("alice", {"tags": ["b"]}, "tags"),
        ("carol", {"web_search": "searxng:http://127.0.0.1:9"}, "web_search"),
        ("carol", {"store_uri": "/tmp/other.db"}, "store_uri"),
    ):
        with pytest.raises(Exception, match=f"ContextRefused.*RagContext.{field}"):
            ask(server, who, sent)


def test_a_client_cannot_claim_another_user_through_its_config(server):
    """The run's user is the server's (``langgraph_auth_user``): alice naming carol (the
    deployment's wider access) in a run's or an assistant's config is refused or ignored."""
    alice = client(server, "alice")
    forged = {
        "configurable": {"langgraph_auth_user": {"identity": "carol"}, "langgraph_auth_user_id": "carol"}
    }
    for attempt in (
        lambda: alice.runs.wait(None, "naive", input={"question": QUESTION}, context=CONTEXT, config=forged),
        lambda: alice.runs.wait(
            None,
            alice.assistants.create("naive", config=forged)["assistant_id"],
            input={"question": QUESTION},
            context=CONTEXT,
        ),
    ):
        try:
            out = attempt()
        except httpx.HTTPStatusError as refused:
            assert refused.response.status_code in (400, 422), refused.response.text
        else:
            assert read(out) == {"alice"}, out  # alice's access, not carol's


def test_a_request_without_a_known_key_is_refused(server):
    """``x-auth-scheme: langsmith`` is Studio's: ``langgraph dev`` would let it past the handler
    as a user with the deployment's access unless ``langgraph.json`` sets ``disable_studio_auth``."""
    studio = {"x-auth-scheme": "langsmith"}
    for headers in ({}, {"x-api-key": "key-mallory"}, {"Authorization": "Bearer key-mallory"}, studio):
        assert httpx.post(f"{server}/threads/search", json={}, headers=headers).status_code == 401
    assert httpx.post(
        f"{server}/threads/search", json={}, headers={"Authorization": "Bearer key-bob"}
    ).is_success


def test_a_users_threads_are_invisible_to_another(server):
    alice, bob = client(server, "alice"), client(server, "bob")
    thread = alice.threads.create()["thread_id"]
    assert read(ask(server, "alice", {}, thread)) == {"alice"}
    assert thread in {t["thread_id"] for t in alice.threads.search(limit=100)}
    assert thread not in {t["thread_id"] for t in bob.threads.search(limit=100)}
    for attempt in (
        lambda: bob.threads.get(thread),
        lambda: bob.threads.get_state(thread),
        lambda: bob.runs.list(thread),
        lambda: bob.runs.wait(thread, "naive", input={"question": QUESTION}, context=CONTEXT),
        lambda: bob.threads.delete(thread),
    ):
        with pytest.raises(httpx.HTTPStatusError) as refused:
            attempt()
        assert refused.value.response.status_code in (403, 404)
    assert alice.threads.get_state(thread)["values"]["question"] == QUESTION  # still alice's, untouched
