"""The served graphs as MCP tools: ``langgraph dev`` on loopback answers MCP at ``{url}/mcp``
(streamable HTTP), and an MCP client (``langchain_mcp_adapters``' ``MultiServerMCPClient``, as an
agent would use it) lists every graph of ``langgraph.json`` as a tool, asks a question graph, and
fills the store through the indexing graph, whose text is then what the question graph finds.

The LangGraph server makes each assistant a tool named after it (its graph id), whose input
schema is the graph's input schema and whose description is the graph's ``description`` in
``langgraph.json`` (a generic line without one); a call is one stateless run, and its result is
the run's output as one text block (Python's ``repr`` of the output dict, so ``literal_eval``
reads it back); a failed run is ``isError`` with the exception's type only (langgraph-api 0.16.7
sends ``__error__["error"]``, not its message). One server for the module, few calls: CI has two
cores.
"""

from __future__ import annotations

import asyncio
import json
from ast import literal_eval
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.server.langgraph_server import Batch, build_store, langgraph_server, scripted_chat, served_env

pytest.importorskip("langchain_mcp_adapters", reason="the MCP client: langchain-mcp-adapters (in 'dev')")

pytestmark = pytest.mark.server

ROOT = Path(__file__).resolve().parents[2]
CANARY = "HERON-5521"
LEDGER = f"# Velmora ledger\n\nThe Velmora ledger password is {CANARY}, kept in the north archive.\n"
QUESTION = "What is the Velmora ledger password?"


@pytest.fixture(scope="module")
def server(tmp_path_factory, demo_corpus) -> Iterator[tuple[str, Path]]:
    """``langgraph dev`` over the demo corpus, reading files under ``docs`` (``RAG_GRAPHS_INDEX_FILES``);
    its URL and that folder."""
    folder = tmp_path_factory.mktemp("mcp")
    docs = folder / "docs"
    docs.mkdir()
    (docs / "harbour.md").write_text("# Harbour\n\nThe Korvik harbour master is Odile Varga.\n")
    with scripted_chat() as chat:
        env = served_env(folder / "milvus.db", chat, RAG_GRAPHS_INDEX_FILES=str(docs), RAG_GRAPHS_K="4")
        build_store(env, [Batch([str(demo_corpus)])], raptor=False)
        with langgraph_server(folder, env=env) as url:
            yield url, docs


def mcp(url: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], list[Any]]:
    """The server's MCP tools, and the result of each ``(tool, arguments)`` call in order, in one
    MCP session (``MultiServerMCPClient``, streamable HTTP)."""
    from langchain_mcp_adapters.client import MultiServerMCPClient

    client = MultiServerMCPClient({"rag": {"url": f"{url}/mcp", "transport": "streamable_http"}})

    async def session() -> tuple[list[Any], list[Any]]:
        async with client.session("rag") as mcp_session:
            tools = (await mcp_session.list_tools()).tools
            results = [await mcp_session.call_tool(name, arguments) for name, arguments in calls]
            return tools, results

    return asyncio.run(session())


def output(result: Any) -> dict[str, Any]:
    """A successful tool call's run output (the server sends it as the dict's ``repr``)."""
    assert not result.isError, result.content
    (block,) = result.content
    return literal_eval(block.text)


def test_every_graph_is_a_tool_with_its_input_schema(server):
    url, _ = server
    tools, _ = mcp(url, [])
    by_name = {t.name: t for t in tools}
    assert set(by_name) == set(json.loads((ROOT / "langgraph.json").read_text())["graphs"])
    assert by_name["naive"].inputSchema["required"] == ["question"]
    index = by_name["index"].inputSchema
    assert {"files", "urls", "texts", "delete", "relabel", "tenant", "tags"} <= set(index["properties"])
    assert all(p.get("description") for p in index["properties"].values())


def test_a_text_indexed_through_mcp_is_what_the_question_tool_finds_until_deleted(server):
    url, docs = server
    source = "text://velmora-ledger"
    _, results = mcp(
        url,
        [
            ("naive", {"question": QUESTION}),
            ("index", {"texts": [{"source": "velmora-ledger", "text": LEDGER}], "files": [str(docs)]}),
            ("naive", {"question": QUESTION}),
            ("index", {"delete": [source], "files": ["/etc/hostname"]}),
            ("index", {"delete": [source]}),
            ("naive", {"question": QUESTION}),
        ],
    )
    before, added, found, refused, deleted, after = results
    before = output(before)
    assert before["answer"] == "Korvik [1]." and before["citations"][0]["chunk_id"]
    assert all(CANARY not in d["page_content"] for d in before["documents"])
    report = output(added)["added"]
    assert [f["path"] for f in report["files"]] == [str(docs / "harbour.md"), source], report
    assert report["failed"] == 0 and report["added"] >= 2
    found = output(found)
    assert any(CANARY in d["page_content"] and d["metadata"]["source"] == source for d in found["documents"])
    # refused before anything is written (the delete beside it too); MCP shows the error's type only
    assert refused.isError and refused.content[0].text == "IndexRequestError"
    assert output(deleted)["deleted"] == [{"target": source, "sources": [source], "chunks": 1}]
    assert all(CANARY not in d["page_content"] for d in output(after)["documents"])
