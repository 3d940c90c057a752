"""The indexing graph served by a real ``langgraph dev`` with per-user access: what a user indexes
carries their tenant, is what their questions find and another tenant's do not, and another
tenant can neither delete it nor write into its tenant. Driven through ``langgraph-sdk`` with API
keys (``RAG_GRAPHS_USERS``), as a deployment's clients drive it; one server for the module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph_sdk import get_sync_client

from tests.server.langgraph_server import Batch, build_store, langgraph_server, scripted_chat, served_env

# one worker sets up this file's server or store (xdist_group: tests/conftest.py)
pytestmark = [pytest.mark.server, pytest.mark.xdist_group("indexing_server")]

KEYS = {"alice": "key-alice", "bob": "key-bob"}
CANARY = "KESTREL-4418"
MEMO = f"# Acme memo\n\nThe Acme depot gate code is {CANARY}, changed every Monday.\n"
QUESTION = "What is the Acme depot gate code?"
SOURCE = "text://acme-memo"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[str]:
    """A server whose users are alice (tenant acme) and bob (tenant globex), over a store holding
    one file of each tenant."""
    folder = tmp_path_factory.mktemp("served-index")
    batches = []
    for tenant in ("acme", "globex"):
        doc = folder / "docs" / f"{tenant}.md"
        doc.parent.mkdir(exist_ok=True)
        doc.write_text(f"# {tenant}\n\n{tenant.title()} ships harbour cranes from Korvik.\n")
        batches.append(Batch([str(doc)], tenant=tenant))
    users = folder / "users.json"
    users.write_text(
        json.dumps(
            {
                KEYS["alice"]: {"identity": "alice", "tenant": "acme"},
                KEYS["bob"]: {"identity": "bob", "tenant": "globex"},
            }
        )
    )
    with scripted_chat() as chat:
        env = served_env(folder / "milvus.db", chat, RAG_GRAPHS_USERS=str(users))
        build_store(env, batches, raptor=False)
        with langgraph_server(folder, env=env) as url:
            yield url


def run(url: str, who: str, graph: str, request: dict[str, Any]) -> dict[str, Any]:
    client = get_sync_client(url=url, api_key=KEYS[who])
    return client.runs.wait(None, graph, input=request, context={"k": 8}, raise_error=False)


def refused(out: dict[str, Any]) -> str:
    assert "__error__" in out, out
    return out["__error__"]["message"]


def test_what_a_user_indexes_is_their_tenants_alone(server):
    added = run(server, "alice", "index", {"texts": [{"source": "acme-memo", "text": MEMO}]})
    assert "__error__" not in added, added
    assert [(f["path"], f["added"]) for f in added["added"]["files"]] == [(SOURCE, 1)]
    found = run(server, "alice", "naive", {"question": QUESTION})
    memo = [d for d in found["documents"] if CANARY in d["page_content"]]
    assert memo and memo[0]["metadata"]["tenant"] == "acme" and memo[0]["metadata"]["source"] == SOURCE
    assert CANARY not in json.dumps(run(server, "bob", "naive", {"question": QUESTION}))

    assert "not a stored source you can read" in refused(run(server, "bob", "index", {"delete": [SOURCE]}))
    relabel = {"relabel": [{"source": SOURCE, "tenant": "globex"}]}
    assert "not a stored source you can read" in refused(run(server, "bob", "index", relabel))
    write = {"texts": [{"source": "x", "text": MEMO}], "tenant": "acme"}
    assert "you may write only to tenant 'globex'" in refused(run(server, "bob", "index", write))
    assert "RagContext.tenant" in refused(
        get_sync_client(url=server, api_key=KEYS["bob"]).runs.wait(
            None, "index", input={"delete": [SOURCE]}, context={"tenant": "acme"}, raise_error=False
        )
    )
    assert any(
        CANARY in d["page_content"]
        for d in run(server, "alice", "naive", {"question": QUESTION})["documents"]
    )

    deleted = run(server, "alice", "index", {"delete": [SOURCE]})
    assert deleted["deleted"] == [{"target": SOURCE, "sources": [SOURCE], "chunks": 1}], deleted
    assert CANARY not in json.dumps(run(server, "alice", "naive", {"question": QUESTION}))
