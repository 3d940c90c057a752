"""Per-user and per-deployment access through a real ``langgraph dev`` (issue 39 item 2, issue 40
item 1): what a run reads is bounded by the server's environment and the caller's user, whatever
context the client sends, and one user's threads are invisible to another.

One server for the module: its environment names tenant ``acme``; its users file
(``RAG_GRAPHS_USERS``) holds alice (acme, tag ``a``), bob (acme, tag ``b``) and carol (no access
of her own: the deployment's). The store holds a canary per reader: alice's (acme, ``a``),
bob's (acme, ``b``) and globex's (tenant globex, tags ``a`` and ``b``, so only the tenant keeps
it out). Every run asks ``naive`` for more passages than the store holds, so a canary missing
from a run's output was filtered out, not outranked.

The same server holds attack round 4's serving checks (issue 50): an ``index`` thread's state is
its graph's alone, a user's assistants are theirs alone, one identity is one access and owns by
identity and tenant, and a client's cost knobs stay under the deployment's caps.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from tests.server.langgraph_server import Batch, build_store, langgraph_server, scripted_chat, served_env

# one worker sets up this file's server or store (xdist_group: tests/conftest.py)
pytestmark = [pytest.mark.server, pytest.mark.xdist_group("users_server")]

CANARIES = {
    "alice": ("acme", ["a"], "ALPHA-ORCHID-7731"),
    "bob": ("acme", ["b"], "BRAVO-LANTERN-5520"),
    "globex": ("globex", ["a", "b"], "GLOBEX-OMEGA-9902"),
}
KEYS = {"alice": "key-alice", "bob": "key-bob", "carol": "key-carol"}
USERS = {
    KEYS["alice"]: {"identity": "alice", "tenant": "acme", "tags": ["a"]},
    KEYS["bob"]: {"identity": "bob", "tenant": "acme", "tags": ["b"]},
    KEYS["carol"]: {"identity": "carol"},
}
CAPS = json.dumps({"num_queries": 4})
"""The deployment's caps on cost knobs (``RAG_GRAPHS_CAPS``): its own on ``num_queries``, the
defaults on the others."""
QUESTION = "What is the vault code?"
CONTEXT = {"k": 8, "max_answer_tokens": 16}


@pytest.fixture(scope="module")
def users_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("served-users") / "users.json"
    path.write_text(json.dumps(USERS))
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory, users_file) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("served-access")
    batches = []
    for owner, (tenant, tags, canary) in CANARIES.items():
        doc = folder / "docs" / f"{owner}.md"
        doc.parent.mkdir(exist_ok=True)
        doc.write_text(f"# {owner} vault\n\nThe vault code of {owner} is {canary}.\n")
        batches.append(Batch([str(doc)], tenant=tenant, tags=tags))
    with scripted_chat() as chat:
        env = served_env(folder / "milvus.db", chat, RAG_GRAPHS_TENANT="acme", RAG_GRAPHS_CAPS=CAPS)
        build_store(env, batches, raptor=False)
        with langgraph_server(folder, env={**env, "RAG_GRAPHS_USERS": str(users_file)}) as url:
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


def refusal(attempt) -> tuple[int, str]:
    """The status and body of the HTTP error ``attempt()`` raises."""
    with pytest.raises(httpx.HTTPStatusError) as refused:
        attempt()
    return refused.value.response.status_code, refused.value.response.text


def test_an_index_threads_state_is_written_by_its_graph_only(server):
    """Attack round 4: alice stopped an ``index`` run before its writes, edited what ``check`` had
    resolved (``threads.update_state``, ``Command(goto=...)``) and resumed: the write nodes deleted
    and relabelled another tenant's sources. The server now refuses the edit, the stop and the
    steering (and the nodes check again: tests/unit/test_indexing_graph.py)."""
    alice = client(server, "alice")
    thread = alice.threads.create()["thread_id"]
    note = {"texts": [{"source": "alice-note", "text": "# Note\n\nThe ferry leaves at nine.\n"}]}
    assert "__error__" not in alice.runs.wait(thread, "index", input=note, raise_error=False)
    everything = {"delete": ["/"]}  # a folder prefix naming every stored file
    for attempt, says in (
        (lambda: alice.threads.update_state(thread, everything, as_node="check"), "no state edits"),
        (
            lambda: alice.runs.wait(thread, "index", input=note, interrupt_before=["delete"]),
            "interrupt_before",
        ),
        (lambda: alice.runs.wait(thread, "index", command={"goto": "delete"}), "goto"),
        (lambda: alice.runs.wait(thread, "naive", command={"update": {"hops": -50}}), "update"),
    ):
        status, body = refusal(attempt)
        assert status == 403 and says in body, (status, body)
    assert read(ask(server, "carol", {})) == {"alice", "bob"}  # nothing of acme's gone


def mcp_tools(url: str, who: str) -> set[str]:
    """The tool names the server's MCP endpoint lists for ``who`` (JSON-RPC ``tools/list``)."""
    reply = httpx.post(
        f"{url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={"x-api-key": KEYS[who], "Accept": "application/json, text/event-stream"},
        timeout=60,
    )
    reply.raise_for_status()
    return {tool["name"] for tool in reply.json()["result"]["tools"]}


def test_a_users_own_assistant_is_theirs_alone(server):
    """Attack round 4: bob listed, read and ran alice's assistant, and saw it as an MCP tool."""
    alice, bob = client(server, "alice"), client(server, "bob")
    mine = alice.assistants.create("naive", name="alice-private", context={"k": 8})["assistant_id"]
    assert mine in {a["assistant_id"] for a in alice.assistants.search(limit=100)}
    theirs = bob.assistants.search(limit=100)
    assert mine not in {a["assistant_id"] for a in theirs}
    assert {"naive", "index"} <= {a["graph_id"] for a in theirs}  # the served graphs: everyone's
    for attempt in (
        lambda: bob.assistants.get(mine),
        lambda: bob.runs.wait(None, mine, input={"question": QUESTION}, context=CONTEXT),
    ):
        assert refusal(attempt)[0] in (403, 404)
    graphs = set(json.loads((Path(__file__).resolve().parents[2] / "langgraph.json").read_text())["graphs"])
    assert mcp_tools(server, "bob") == graphs
    assert mcp_tools(server, "alice") > graphs
    assert read(bob.runs.wait(None, "naive", input={"question": QUESTION}, context=CONTEXT)) == {"bob"}


def rewrite(path: Path, users: dict) -> None:
    """The users file, changed as an operator would (the server reads it again by its mtime)."""
    path.write_text(json.dumps(users))
    stamp = time.time_ns()
    os.utime(path, ns=(stamp, stamp))


def test_one_identity_is_one_access_and_owns_by_identity_and_tenant(server, users_file):
    """Attack round 4: two keys of one identity in two tenants loaded without a word and shared
    their threads (the owner was the identity alone)."""
    alice = client(server, "alice")
    thread = alice.threads.create()["thread_id"]
    try:
        rewrite(users_file, {**USERS, "key-alice-globex": {"identity": "alice", "tenant": "globex"}})
        reply = httpx.post(f"{server}/threads/search", json={}, headers={"x-api-key": KEYS["bob"]})
        assert (
            reply.status_code == 500 and "alice" not in reply.text
        )  # refused until fixed (the log says why)
        rewrite(users_file, {**USERS, KEYS["alice"]: {"identity": "alice", "tenant": "globex"}})
        assert refusal(lambda: alice.threads.get(thread))[0] == 404  # alice of globex: not her thread
        assert thread not in {t["thread_id"] for t in alice.threads.search(limit=100)}
    finally:
        rewrite(users_file, USERS)
    assert alice.threads.get(thread)["thread_id"] == thread


def test_a_cost_knob_above_the_deployments_cap_is_refused_naming_the_field_and_cap(server):
    """Attack round 4: ``num_queries=2000`` gave 2,000 searches and 2,001 model calls in one run."""
    alice = client(server, "alice")
    for sent, says in (
        ({"num_queries": 2000}, "RagContext.num_queries=2000: this deployment allows at most 4"),
        ({"graph_search": {"neighbourhood": 10**6}}, "RagContext.graph_search.neighbourhood=1000000"),
        ({"max_answer_tokens": 10**6}, "RagContext.max_answer_tokens=1000000"),
    ):
        out = alice.runs.wait(
            None, "multi_query", input={"question": QUESTION}, context={**CONTEXT, **sent}, raise_error=False
        )
        assert says in json.dumps(out), out
    fine = alice.runs.wait(
        None, "multi_query", input={"question": QUESTION}, context={**CONTEXT, "num_queries": 4}
    )
    assert read(fine) == {"alice"}


def wait_for(find, seconds: float):
    """``find()`` once it is truthy, polling every half second for up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while not (found := find()):
        assert time.monotonic() < deadline, f"nothing after {seconds} s"
        time.sleep(0.5)
    return found


def test_a_crons_runs_read_as_its_user_and_stop_once_its_key_is_revoked(server, users_file):
    """The server starts a cron's runs as its creator by identity alone: they read under the
    deployment's access (bob's cron read alice's passages), and a revoked key's cron kept running
    and calling the model (attack round 4). Every few seconds here (a seconds field)."""
    bob = client(server, "bob")
    thread = bob.threads.create()["thread_id"]
    cron = bob.crons.create_for_thread(
        thread, "naive", schedule="* * * * * */2", input={"question": QUESTION}, context=CONTEXT
    )
    try:
        wait_for(lambda: [r for r in bob.runs.list(thread) if r["status"] == "success"], 60)
        assert read(bob.threads.get_state(thread)["values"]) == {"bob"}
        rewrite(users_file, {k: v for k, v in USERS.items() if v["identity"] != "bob"})
        time.sleep(2)  # a run started before the revocation may still finish
        revoked = datetime.now(UTC)
        time.sleep(12)  # two or more of the scheduler's rounds (every 5 s)
        restored = datetime.now(UTC)
        rewrite(users_file, USERS)
        started = [datetime.fromisoformat(r["created_at"]) for r in bob.runs.list(thread, limit=100)]
        assert not [t for t in started if revoked < t < restored], started
    finally:
        rewrite(users_file, USERS)
        bob.crons.delete(cron["cron_id"])
