"""Web search by spec: ``none``, ``duckduckgo``, ``tavily`` or ``searxng:<url>``, as a LangChain tool.

CRAG's web branch and ReAct's ``web_search`` tool call ``RagContext.web_search``; ``web_tool`` turns
the setting's checked string form (``RAG_GRAPHS_WEB_SEARCH``, ``--web-search``, LangGraph Studio) into
LangChain's own tool for each engine, wrapped so every engine returns a list of result dicts
(``rag_graphs.llm.tools.web_documents`` makes each one a ``kind="web"`` passage, fenced as data in
prompts like every stored passage). The engines' packages are the ``web`` extra
(``pip install -e ".[web]"``), except SearXNG, whose client ships with langchain-community.
"""

from __future__ import annotations

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
    from langchain_community.tools import DuckDuckGoSearchResults

    engine = DuckDuckGoSearchResults(output_format="list", num_results=RESULTS)
    return _named(lambda query: engine.invoke(query), "DuckDuckGo")


def _tavily() -> BaseTool:
    from langchain_tavily import TavilySearch  # type: ignore[import-not-found, unused-ignore]

    engine = TavilySearch(max_results=RESULTS)
    return _named(lambda query: engine.invoke({"query": query}), "Tavily")


def _searxng(url: str) -> BaseTool:
    from langchain_community.utilities import SearxSearchWrapper

    engine = SearxSearchWrapper(searx_host=url)
    return _named(lambda query: engine.results(query, num_results=RESULTS), f"SearXNG at {url}")


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
