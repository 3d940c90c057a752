"""The served graphs as MCP tools an agent can use (issue 49 item 1): ``langgraph dev`` on loopback
answers MCP at ``{url}/mcp`` (streamable HTTP) through the project's own endpoint
(``rag_graphs.serve.mcp_server``), as an MCP client (``langchain_mcp_adapters``'
``MultiServerMCPClient``, as an agent would use it) and raw JSON-RPC see it.

Every graph of ``langgraph.json`` is a tool with its input schema and the description its
module's docstring gives (what it does, when it pays, its cost); a call is one stateless run whose
result is JSON text and the same JSON as ``structuredContent`` (answer, outcome, citations with
sources and quotes, the passages' sources, usage). Every request carries a user's key and runs
under that user's access: the users file holds ada (tenant ``north``) and ben (tenant ``south``);
the demo corpus and what ada indexes through MCP are north's, one ledger is south's.

One server for the module, few calls: CI has two cores.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.langgraph_server import Batch, build_store, langgraph_server, scripted_chat, served_env

pytest.importorskip("langchain_mcp_adapters", reason="the MCP client: langchain-mcp-adapters (in 'dev')")

# one worker sets up this file's server or store (xdist_group: tests/conftest.py)
pytestmark = [pytest.mark.server, pytest.mark.xdist_group("mcp_server")]

ROOT = Path(__file__).resolve().parents[2]
GRAPHS = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
CANARY = "HERON-5521"
LEDGER = f"# Velmora ledger\n\nThe Velmora ledger password is {CANARY}, kept in the north archive.\n"
SOUTH = (
    "# Velmora ledger, south copy\n\nThe south office keeps its Velmora ledger password in a sealed box.\n"
)
QUESTION = "What is the Velmora ledger password?"
KEYS = {"ada": "key-ada", "ben": "key-ben"}
USERS = {
    KEYS["ada"]: {"identity": "ada", "tenant": "north"},
    KEYS["ben"]: {"identity": "ben", "tenant": "south"},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory, demo_corpus) -> Iterator[tuple[str, Path, Path]]:
    """``langgraph dev`` over the demo corpus (north) and the south ledger, reading files under
    ``docs`` (``RAG_GRAPHS_INDEX_FILES``); its URL, that folder and the south ledger's path."""
    folder = tmp_path_factory.mktemp("mcp")
    docs, south = folder / "docs", folder / "south" / "ledger.md"
    docs.mkdir()
    south.parent.mkdir()
    (docs / "harbour.md").write_text("# Harbour\n\nThe Korvik harbour master is Odile Varga.\n")
    south.write_text(SOUTH)
    users = folder / "users.json"
    users.write_text(json.dumps(USERS))
    with scripted_chat() as chat:
        env = served_env(folder / "milvus.db", chat, RAG_GRAPHS_INDEX_FILES=str(docs), RAG_GRAPHS_K="4")
        batches = [Batch([str(demo_corpus)], tenant="north"), Batch([str(south)], tenant="south")]
        build_store(env, batches, raptor=False)
        with langgraph_server(folder, env={**env, "RAG_GRAPHS_USERS": str(users)}) as url:
            yield url, docs, south


def mcp(url: str, who: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], list[Any]]:
    """The server's MCP tools as ``who`` sees them, and the result of each ``(tool, arguments)``
    call in order, in one MCP session (``MultiServerMCPClient``, streamable HTTP, ``who``'s key)."""
    from langchain_mcp_adapters.client import MultiServerMCPClient

    connection = {"url": f"{url}/mcp", "transport": "streamable_http", "headers": {"x-api-key": KEYS[who]}}
    client = MultiServerMCPClient({"rag": connection})

    async def session() -> tuple[list[Any], list[Any]]:
        async with client.session("rag") as mcp_session:
            tools = (await mcp_session.list_tools()).tools
            results = [await mcp_session.call_tool(name, arguments) for name, arguments in calls]
            return tools, results

    return asyncio.run(session())


def rpc(url: str, method: str, params: dict[str, Any], key: str | None) -> httpx.Response:
    """One raw JSON-RPC request to ``/mcp`` (stateless: no ``initialize`` first)."""
    headers = {"Accept": "application/json, text/event-stream", **({"x-api-key": key} if key else {})}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(f"{url}/mcp", json=body, headers=headers, timeout=120)


def output(result: Any) -> dict[str, Any]:
    """A successful call's result: its JSON text, which is its ``structuredContent``."""
    assert not result.isError, result.content
    (block,) = result.content
    assert json.loads(block.text) == result.structuredContent
    return result.structuredContent


def test_every_graph_is_a_tool_an_agent_can_choose_by_its_description(server):
    url = server[0]
    tools, _ = mcp(url, "ada", [])
    by_name = {t.name: t for t in tools}
    assert set(by_name) == set(GRAPHS)
    descriptions = {name: tool.description for name, tool in by_name.items()}
    assert descriptions == {
        name: entry["description"] for name, entry in GRAPHS.items()
    }  # from the docstrings
    assert len(set(descriptions.values())) == len(descriptions)
    assert descriptions["ircot"].startswith("IRCoT") and descriptions["hyde"].startswith("HyDE")
    assert all(
        "When it pays:" in descriptions[m] and "Cost:" in descriptions[m] for m in set(GRAPHS) - {"index"}
    )
    assert by_name["naive"].inputSchema["required"] == ["question"]
    assert "citations" in by_name["naive"].outputSchema["required"]
    index = by_name["index"].inputSchema
    assert {"files", "urls", "texts", "delete", "relabel", "tenant", "tags"} <= set(index["properties"])
    assert all(p.get("description") for p in index["properties"].values())


def test_a_call_is_json_and_structured_content_and_needs_a_key(server):
    url = server[0]
    reply = rpc(
        url,
        "tools/call",
        {"name": "naive", "arguments": {"question": "Who is the Korvik harbour master?"}},
        KEYS["ada"],
    )
    reply.raise_for_status()
    result = reply.json()["result"]
    assert not result.get("isError"), result
    structured = result["structuredContent"]
    assert json.loads(result["content"][0]["text"]) == structured  # JSON, not a Python repr
    assert structured["answer"] == "Korvik [1]." and structured["outcome"] == "answered"
    (citation,) = structured["citations"]
    assert citation["chunk_id"] and citation["source"] == structured["sources"][0] and citation["quote"]
    assert structured["usage"]["retrievals"] >= 1 and structured["usage"]["llm_calls"] >= 1
    assert "documents" not in structured and "steps" not in structured
    for key in (None, "key-nobody"):  # refused at the door, before MCP reads the request
        assert rpc(url, "tools/list", {}, key).status_code == 401


def test_a_text_ada_indexes_through_mcp_is_hers_alone_until_she_deletes_it(server):
    url, docs, south = server
    source = "text://velmora-ledger"
    _, (added, found) = mcp(
        url,
        "ada",
        [
            ("index", {"texts": [{"source": "velmora-ledger", "text": LEDGER}], "files": [str(docs)]}),
            ("naive", {"question": QUESTION}),
        ],
    )
    report = output(added)["added"]
    assert [f["path"] for f in report["files"]] == [str(docs / "harbour.md"), source], report
    assert report["failed"] == 0 and report["added"] >= 2
    found = output(found)
    assert source in found["sources"] and str(south) not in found["sources"]  # north's alone
    assert any(c["source"] == source and CANARY in c["quote"] for c in found["citations"]), found["citations"]

    # ben (south) asks the same: he reads south's ledger only, and cannot delete ada's text
    _, (his, refused) = mcp(url, "ben", [("naive", {"question": QUESTION}), ("index", {"delete": [source]})])
    his = output(his)
    assert his["sources"] == [str(south)] and all(CANARY not in c["quote"] for c in his["citations"])
    assert refused.isError and refused.content[0].text.startswith("IndexRequestError: IndexRequest.delete")
    assert "not a stored source you can read" in refused.content[0].text

    _, (deleted, after) = mcp(
        url, "ada", [("index", {"delete": [source]}), ("naive", {"question": QUESTION})]
    )
    assert output(deleted)["deleted"] == [{"target": source, "sources": [source], "chunks": 1}]
    assert source not in output(after)["sources"]


def test_the_agent_of_docs_mcp_md_uses_the_tools_as_written(server):
    """``docs/mcp.md``'s LangGraph agent, run as written but for the server's URL and a scripted
    chat model (one tool call, then an answer) in place of ``openai:gpt-4.1-mini``."""
    from langchain_core.messages import AIMessage

    from tests.conftest import fake_tool_chat

    url = server[0]
    (code,) = re.findall(r"```py\n(.*?)```", (ROOT / "docs" / "mcp.md").read_text(), flags=re.S)
    call = {"name": "naive", "args": {"question": "Who is the Korvik harbour master?"}, "id": "call-1"}
    model = fake_tool_chat(AIMessage(content="", tool_calls=[call]), "Odile Varga (docs/harbour.md).")
    code = code.replace("http://127.0.0.1:2024/mcp", f"{url}/mcp").replace('"openai:gpt-4.1-mini"', "MODEL")
    assert code.count(f"{url}/mcp") == 1 and code.count("MODEL") == 1
    namespace: dict[str, Any] = {"MODEL": model}
    exec(compile(code, "docs/mcp.md", "exec"), namespace)  # noqa: S102 - our own docs
    messages = namespace["messages"]
    assert messages[-1].content == "Odile Varga (docs/harbour.md)."
    (tool,) = [m for m in messages if m.type == "tool"]
    assert tool.name == "naive" and tool.status == "success"
    structured = tool.artifact["structured_content"]
    blocks = tool.content if isinstance(tool.content, list) else [{"type": "text", "text": tool.content}]
    assert json.loads(blocks[0]["text"]) == structured
    assert structured["citations"] and structured["citations"][0]["quote"]
