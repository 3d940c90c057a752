"""Web search by spec: ``none``, ``duckduckgo``, ``tavily`` or ``searxng:<url>``, as a LangChain tool.

CRAG's web branch and ReAct's ``web_search`` tool call ``RagContext.web_search``; ``web_tool`` turns
the setting's checked string form (``RAG_GRAPHS_WEB_SEARCH``, ``--web-search``, LangGraph Studio) into
LangChain's own tool for each engine, wrapped so every engine returns a list of result dicts
(``rag_graphs.llm.tools.web_documents`` makes each one a ``kind="web"`` passage, fenced as data in
prompts like every stored passage). The engines' packages are the ``web`` extra
(``pip install -e ".[web]"``: ``ddgs`` and ``langchain-tavily``); SearXNG needs none, its JSON API is
one GET. Neither goes through langchain-community, which warns on import that it is being sunset.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from functools import lru_cache
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

RESULTS = 5
"""Results each web search returns (CRAG keeps up to ``k`` of them)."""


def _named(func: Any, engine: str) -> BaseTool:
    """A ``web_search`` tool (the name ReAct's prompts use) calling ``func(query)``."""
    return StructuredTool.from_function(
        func=func, name="web_search", description=f"Search the web ({engine}); input: a search query."
    )


def _duckduckgo() -> BaseTool:
    from ddgs import DDGS  # type: ignore[import-not-found, unused-ignore]

    def search(query: str) -> list[dict[str, Any]]:
        hits = DDGS().text(query, max_results=RESULTS)
        return [
            {"title": h.get("title", ""), "link": h.get("href", ""), "snippet": h.get("body", "")}
            for h in hits
        ]

    return _named(search, "DuckDuckGo")


def _tavily() -> BaseTool:
    from langchain_tavily import TavilySearch  # type: ignore[import-not-found, unused-ignore]

    engine = TavilySearch(max_results=RESULTS)
    return _named(lambda query: engine.invoke({"query": query}), "Tavily")


SEARXNG_TIMEOUT = 30.0
"""Seconds a SearXNG query may take before the search step fails (and is retried like a model call)."""


def _searxng(url: str) -> BaseTool:
    """SearXNG's JSON API (``GET <url>/search?q=...&format=json``; the instance must allow the json
    format), its results as ``{"title", "link", "snippet", "engines", "category"}`` dicts."""

    def search(query: str) -> list[dict[str, Any]]:
        address = f"{url.rstrip('/')}/search?{urllib.parse.urlencode({'q': query, 'format': 'json'})}"
        with urllib.request.urlopen(address, timeout=SEARXNG_TIMEOUT) as response:  # noqa: S310 - the user's own URL
            results = json.load(response).get("results", [])
        return [
            {
                "title": r.get("title", ""),
                "link": r.get("url", ""),
                "snippet": r.get("content", ""),
                "engines": r.get("engines", []),
                "category": r.get("category", ""),
            }
            for r in results[:RESULTS]
        ]

    return _named(search, f"SearXNG at {url}")


def web_tool(spec: str | BaseTool | None) -> BaseTool | None:
    """The tool ``RagContext.web_search`` names (checked when set, ``rag_graphs.config.specs``):
    a tool passes as it is; a spec's tool is built on first use and kept per spec.

    Raises:
        ValueError: the engine cannot start (e.g. Tavily without ``TAVILY_API_KEY``), naming the setting.
    """
    if spec is None or isinstance(spec, BaseTool):
        return spec
    return _built(spec)


@lru_cache(maxsize=16)
def _built(spec: str) -> BaseTool:
    name, _, url = spec.partition(":")
    try:
        return _searxng(url) if name == "searxng" else {"duckduckgo": _duckduckgo, "tavily": _tavily}[name]()
    except ImportError as exc:
        raise ValueError(
            f'RagContext.web_search={spec!r} needs {exc.name or "its package"}: pip install -e ".[web]"'
        ) from exc
    except ValueError as exc:  # e.g. Tavily without TAVILY_API_KEY
        raise ValueError(f"RagContext.web_search={spec!r}: {exc}") from exc
