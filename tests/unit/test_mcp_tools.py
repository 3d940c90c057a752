"""What an MCP client's agent sees of the served graphs (``rag_graphs.serve.mcp_tools``): tool
descriptions from the graphs' docstrings, in ``langgraph.json``, and a call's result as JSON text
and ``structuredContent``. The served endpoint itself is ``tests/server/test_mcp.py``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from rag_graphs.catalog import METHODS
from rag_graphs.serve.mcp_server import tool_name
from rag_graphs.serve.mcp_tools import ANSWER_SCHEMA, described_graphs, description_of, tool_result

ROOT = Path(__file__).resolve().parents[2]
CONFIG = json.loads((ROOT / "langgraph.json").read_text())


def _citation(marker: int, source: str, quote: str) -> dict:
    return {
        "marker": marker,
        "chunk_id": f"chunk-{marker}",
        "source": source,
        "cref": "#/texts/0",
        "kind": "text",
        "page": -1,
        "quote": quote,
        "explicit": True,
    }


def _document(source: str, text: str) -> dict:
    """A passage as the LangGraph server's JSON of a run's ``documents`` has it."""
    return {"id": f"id-{source}", "page_content": text, "metadata": {"source": source}, "type": "Document"}


OUTPUT = {
    "answer": "Odile Varga [1].",
    "citations": [_citation(1, "docs/harbour.md", "The Korvik harbour master is Odile Varga.")],
    "documents": [
        _document("docs/harbour.md", "The Korvik harbour master is Odile Varga."),
        _document("docs/fleet.md", "The fleet sails in May."),
        _document("docs/harbour.md", "Korvik lies on the north shore."),
    ],
    "steps": [{"node": "retrieve", "kind": "retrieve", "query": "Who is the harbour master?"}],
    "usage": {"llm_calls": 1, "prompt_tokens": 812, "completion_tokens": 9, "retrievals": 1, "hops": 1},
    "stop_reason": "answered",
    "outcome": "answered",
}


def _squash(text: str) -> str:
    return re.sub(r"[^a-z]", "", text.lower())


def test_langgraph_json_describes_every_graph_from_its_docstring():
    """The dict form LangGraph reads descriptions from; the text lives in the docstrings
    (regenerate with ``python -m rag_graphs.serve.mcp_tools langgraph.json``)."""
    assert CONFIG["graphs"] == described_graphs(CONFIG, ROOT), (
        "run python -m rag_graphs.serve.mcp_tools langgraph.json"
    )
    assert set(CONFIG["graphs"]) == {*METHODS, "index"}


@pytest.mark.parametrize("method", list(METHODS))
def test_a_method_is_described_by_name_with_when_it_pays_and_its_cost(method):
    description = CONFIG["graphs"][method]["description"]
    summary, _, rest = description.partition(" When it pays: ")
    assert _squash(method) in _squash(summary.split(":")[0]), summary  # named as its source names it
    pays, _, cost = rest.partition(" Cost: ")
    assert pays and cost, description
    assert "``" not in description and "\n" not in description


def test_methods_descriptions_differ():
    descriptions = [CONFIG["graphs"][m]["description"] for m in METHODS]
    assert len(set(descriptions)) == len(descriptions)


def test_a_description_keeps_the_summary_and_the_two_sections_only():
    docstring = """HyDE: search with a ``hypothetical`` passage.

        START -> hypothesize -> retrieve -> generate -> END

    Details an agent need not read.

    When it pays: questions worded
    unlike the documents.
    Cost: two model calls.
    """
    assert description_of(docstring) == (
        "HyDE: search with a `hypothetical` passage. "
        "When it pays: questions worded unlike the documents. Cost: two model calls."
    )


def test_a_method_call_is_json_text_and_structured_content_with_citations():
    text, structured, failed = tool_result("naive", OUTPUT)
    assert not failed
    assert json.loads(text) == structured
    jsonschema.validate(structured, ANSWER_SCHEMA)  # what the tool's outputSchema declares
    assert structured["answer"] == "Odile Varga [1]." and structured["outcome"] == "answered"
    (citation,) = structured["citations"]
    assert citation["source"] == "docs/harbour.md" and "Odile Varga" in citation["quote"]
    assert structured["sources"] == ["docs/harbour.md", "docs/fleet.md"]  # best first, once each
    assert structured["usage"] == OUTPUT["usage"]
    assert "documents" not in structured and "steps" not in structured  # an agent's context is dear


def test_a_self_checking_method_says_how_far_to_trust_it():
    _, structured, _ = tool_result("self_rag", {**OUTPUT, "outcome": "unreliable", "confidence": "low"})
    assert (structured["outcome"], structured["confidence"]) == ("unreliable", "low")
    jsonschema.validate(structured, ANSWER_SCHEMA)


def test_the_indexing_graphs_report_is_sent_as_it_is():
    report = {
        "added": {"files": [{"path": "text://ledger", "chunks": 1}], "added": 1, "failed": 0},
        "deleted": [],
    }
    text, structured, failed = tool_result("index", report)
    assert (json.loads(text), structured, failed) == (report, report, False)


def test_a_failed_run_is_an_error_naming_its_type_and_message():
    error = {
        "__error__": {
            "error": "IndexRequestError",
            "message": "IndexRequest.delete: 'x': not a stored source",
        }
    }
    text, structured, failed = tool_result("index", error)
    assert failed and text == "IndexRequestError: IndexRequest.delete: 'x': not a stored source"
    assert structured == {
        "error": "IndexRequestError",
        "message": "IndexRequest.delete: 'x': not a stored source",
    }


@pytest.mark.parametrize(
    ("name", "tool"), [("naive", "naive"), ("alice private", "alice_private"), ("ask: Korvik?", "ask_Korvik")]
)
def test_an_assistants_name_becomes_a_valid_tool_name(name, tool):
    assert tool_name(name) == tool
