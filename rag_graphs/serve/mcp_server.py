"""The served graphs as MCP tools an agent can use, at ``/mcp`` on the LangGraph server.

LangGraph's own ``/mcp`` (langgraph-api 0.16) lists every assistant as a tool but answers a call
with one text block holding Python's ``repr`` of the output dict: no JSON, no
``structuredContent``. This endpoint replaces it (``langgraph.json``: ``http.app`` names
``app``, ``http.disable_mcp`` turns the built-in one off) with the official MCP SDK's server
(streamable HTTP, stateless, JSON responses), keeping what the built-in one did right:

- the tools are the assistants the caller may see (the served graphs, and a user's own
  assistants for that user alone), named and described as the server knows them (the
  descriptions ``langgraph.json`` gives the graphs: ``rag_graphs.serve.mcp_tools``), with each
  graph's input schema; a method tool also declares its output schema (``ToolAnswer``);
- a call is one stateless run of the assistant, whose output ``mcp_tools.tool_result`` shapes.

**Auth**: ``http.enable_custom_route_auth`` puts the server's auth (``rag_graphs.serve.auth``) in
front of this route, so a request without a known key is refused before MCP reads it. Every
list and run then goes back through the server's API *with the caller's own key*
(``AUTH_HEADERS``, in process: an ASGI transport on the server's app, not the SDK's loopback
that skips auth), so the server authenticates and authorises it as any client's request: the
run reads under the caller's access, whose assistants and threads it may touch is the auth
handler's call, and nothing here decides access itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx
from langgraph_sdk.client import LangGraphClient
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from rag_graphs.catalog import METHODS
from rag_graphs.serve.auth import SYSTEM
from rag_graphs.serve.mcp_tools import ANSWER_SCHEMA, tool_result

AUTH_HEADERS = ("authorization", "x-api-key")
"""The request headers that carry a caller's key (``rag_graphs.serve.auth.api_key``), forwarded
with every request this endpoint makes to the server's API for the caller."""
MAX_TOOLS = 100
"""Assistants listed as tools at most (the built-in endpoint's page size)."""
_INVALID = re.compile(r"[^a-zA-Z0-9_\-.]")

server: Server = Server(
    "rag-graphs",
    instructions="Each method tool answers a question from the documents with citations; its description "
    "says when it pays and what it costs. The index tool adds, deletes and relabels documents.",
)


def tool_name(assistant_name: str) -> str:
    """An assistant's name as an MCP tool name (``^[a-zA-Z0-9_.-]{1,128}$``), as LangGraph's own
    endpoint names it: whitespace runs become ``_``, other characters go."""
    return _INVALID.sub("", re.sub(r"\s+", "_", assistant_name.strip()))[:128]


@contextlib.asynccontextmanager
async def _api() -> AsyncIterator[LangGraphClient]:
    """The server's API as the current MCP request's caller: their key, through the server's app
    with its auth (the request MCP is answering gives both)."""
    request: Request = server.request_context.request  # type: ignore[assignment]
    headers = {name: value for name in AUTH_HEADERS if (value := request.headers.get(name))}
    transport = httpx.ASGITransport(app=request.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://api", headers=headers) as http:
        yield LangGraphClient(http)


def _visible(assistants: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The caller's assistants by tool name (the first of a name wins, as LangGraph's endpoint)."""
    named: dict[str, Mapping[str, Any]] = {}
    for assistant in assistants:
        named.setdefault(tool_name(assistant["name"]), assistant)
    named.pop("", None)
    return named


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    """Every assistant the caller may see, as a tool; a user's own assistant of a graph is
    described as the graph is, unless it has a description of its own."""
    async with _api() as api:
        named = _visible(await api.assistants.search(limit=MAX_TOOLS))
        schemas = await asyncio.gather(
            *(api.assistants.get_schemas(a["assistant_id"]) for a in named.values())
        )
    served = {
        a["graph_id"]: a.get("description")
        for a in named.values()
        if SYSTEM.items() <= (a.get("metadata") or {}).items()
    }
    tools = []
    for (name, assistant), schema in zip(named.items(), schemas, strict=True):
        graph = assistant["graph_id"]
        description = assistant.get("description") or served.get(graph) or f"The {graph} graph of rag-graphs."
        tools.append(
            types.Tool(
                name=name,
                title=assistant["name"],
                description=description,
                inputSchema={"type": "object", **(schema.get("input_schema") or {})},
                outputSchema=ANSWER_SCHEMA if graph in METHODS else None,
            )
        )
    return tools


@server.call_tool()
async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
    """One stateless run of the assistant named ``name``, as the caller; its output shaped for
    an agent: JSON text and ``structuredContent``."""
    async with _api() as api:
        assistant = _visible(await api.assistants.search(limit=MAX_TOOLS)).get(name)
        if assistant is None:
            raise ValueError(f"unknown tool {name!r}: tools/list names the tools you may call")
        output = await api.runs.wait(None, assistant["assistant_id"], input=arguments, raise_error=False)
    text, structured, failed = tool_result(assistant["graph_id"], output)
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=text)]
    if failed:
        return types.CallToolResult(content=content, structuredContent=structured, isError=True)
    return content, structured  # the SDK checks it against the tool's output schema


class _Endpoint:
    """The session manager as the ASGI app of one route (``/mcp``, with no trailing slash)."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.manager.handle_request(scope, receive, send)


def build_app() -> Starlette:
    """The Starlette app ``langgraph.json``'s ``http.app`` mounts: ``/mcp`` and the lifespan
    that runs its session manager."""
    manager = StreamableHTTPSessionManager(app=server, json_response=True, stateless=True)

    @contextlib.asynccontextmanager
    async def lifespan(_: ASGIApp) -> AsyncIterator[None]:
        async with manager.run():
            yield

    endpoint = _Endpoint(manager)
    return Starlette(
        routes=[Route("/mcp", endpoint=endpoint, methods=["GET", "POST", "DELETE"])], lifespan=lifespan
    )


app = build_app()
