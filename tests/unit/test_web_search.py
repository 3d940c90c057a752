"""Web search by spec: ``RAG_GRAPHS_WEB_SEARCH=searxng:<url>`` (and the other engines' specs)
becomes LangChain's tool for the engine; CRAG's web branch uses it against a SearXNG stand-in on
loopback, and the results reach the answer prompt fenced as data."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from urllib.parse import parse_qs, urlparse

import pytest

from rag_graphs.config.context import RagContext
from rag_graphs.llm.web import web_tool
from rag_graphs.methods import get_graph
from tests.conftest import recording_chat

QUESTION = "Where was the founder of the Velmora Institute born?"
PAGE = {  # one result as SearXNG's JSON API returns it
    "url": "https://example.org/brandt",
    "title": "Ilsa Brandt",
    "content": "Ilsa Brandt was born in Korvik.",
    "engines": ["wikipedia"],
    "category": "general",
}


class _SearxStandIn(http.server.BaseHTTPRequestHandler):
    """SearXNG's JSON API: ``GET /?q=...&format=json`` -> ``{"results": [...]}``."""

    queries: list[dict] = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        type(self).queries.append(parse_qs(urlparse(self.path).query))
        body = json.dumps({"query": "q", "number_of_results": 1, "results": [PAGE]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def searx() -> Iterator[str]:
    _SearxStandIn.queries = []
    server = http.server.HTTPServer(("127.0.0.1", 0), _SearxStandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()


def test_searxng_spec_is_a_web_search_tool_returning_result_dicts(searx):
    spec = RagContext(web_search=f"searxng:{searx}").web_search
    assert spec == f"searxng:{searx}"  # settings hold the checked spec; the tool is built where it is used
    tool = web_tool(spec)
    assert tool is not None and tool.name == "web_search"
    results = tool.invoke("Ilsa Brandt birthplace")
    assert [(r["link"], r["snippet"]) for r in results] == [(PAGE["url"], PAGE["content"])]
    (query,) = _SearxStandIn.queries
    assert query["q"] == ["Ilsa Brandt birthplace"] and query["format"] == ["json"]


def test_crag_searches_the_web_set_by_env_var_and_fences_what_it_found(
    searx, loaded, make_context, monkeypatch
):
    monkeypatch.setenv("RAG_GRAPHS_WEB_SEARCH", f"searxng:{searx}")
    model = recording_chat('{"relevance": "incorrect"}', "Ilsa Brandt birthplace", "Korvik [1].")
    out = get_graph("crag").invoke({"question": QUESTION}, context=make_context(chat_model=model, k=1))
    assert [s["node"] for s in out["steps"]][:4] == ["retrieve", "grade", "rewrite", "web_search"]
    assert _SearxStandIn.queries[0]["q"] == ["Ilsa Brandt birthplace"]
    citation = out["citations"][0]
    assert (citation["source"], citation["kind"]) == (PAGE["url"], "web")
    answer_prompt = str(model.seen[-1][-1].content)
    assert f"<passage>\n({PAGE['url']}, web)\n{PAGE['content']}\n</passage>" in answer_prompt


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("bing", "unknown web search"),
        ("searxng:ftp://host", "needs an http"),
        ("searxng:", "needs an http"),
        ("duckduckgo:extra", "unknown web search"),
    ],
)
def test_bad_web_search_specs_name_the_setting(spec, message):
    with pytest.raises(ValueError, match=f"RagContext.web_search=.*{message}"):
        RagContext(web_search=spec)


def test_none_turns_web_search_off():
    assert RagContext(web_search="none").web_search is None


def test_duckduckgo_spec_maps_ddgs_hits_to_result_dicts(monkeypatch):
    """``duckduckgo`` calls the ``ddgs`` package (the ``web`` extra) directly, not langchain-community's
    sunset wrapper; its hits come back in the shape the other engines' results have."""
    import sys
    import types

    from rag_graphs.llm import web

    asked = []

    class FakeDDGS:
        def text(self, query, max_results):
            asked.append((query, max_results))
            return [{"title": "Ilsa Brandt", "href": PAGE["url"], "body": PAGE["content"]}]

    monkeypatch.setitem(sys.modules, "ddgs", types.SimpleNamespace(DDGS=FakeDDGS))
    web._built.cache_clear()
    try:
        results = web_tool("duckduckgo").invoke("Ilsa Brandt birthplace")
    finally:
        web._built.cache_clear()
    assert results == [{"title": "Ilsa Brandt", "link": PAGE["url"], "snippet": PAGE["content"]}]
    assert asked == [("Ilsa Brandt birthplace", web.RESULTS)]
