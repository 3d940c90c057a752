"""What an MCP client's agent sees of a served graph: the tool's description, and a call's result.

**Descriptions** live once, in each graph module's docstring: its first sentence (what it does,
named as its paper or source names it) and, for a method, its ``When it pays:`` and ``Cost:``
paragraphs. ``langgraph.json`` carries them in its graphs' dict form (``{"path", "description"}``),
which LangGraph gives each graph's assistant, so Studio, the assistants API and the MCP endpoint
(``rag_graphs.serve.mcp_server``) show the same text. ``langgraph.json`` is written from the
docstrings by ``python -m rag_graphs.serve.mcp_tools langgraph.json``, and
``tests/unit/test_mcp_tools.py`` fails when the two drift apart.

**Results**: a method's run output is shaped to what an agent reads (``ToolAnswer``: the answer,
how the run ended, the citations with their sources and quotes, the sources of every passage it
read, the cost) and sent twice, as MCP's ``structuredContent`` and as its JSON text (the spec's
advice for clients that read text only). The passages' text and the reasoning chain stay out:
they cost an agent's context many times the answer, and the citations quote what the answer
stands on. Any other graph (the
indexing graph's report) is sent as it is, JSON too.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NotRequired

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from rag_graphs.catalog import METHODS
from rag_graphs.state import Citation, Confidence, Outcome, Usage

SECTIONS = ("When it pays:", "Cost:")
"""The paragraphs of a method's docstring that join its first sentence in its description."""


class ToolAnswer(TypedDict):
    """A method tool's result: what an agent needs to use, trust and pay for an answer."""

    answer: str
    outcome: Outcome
    stop_reason: str
    citations: list[Citation]
    sources: list[str]
    """The sources of every passage the answer read (its final context), best first."""
    usage: Usage
    confidence: NotRequired[Confidence]


ANSWER_SCHEMA: dict[str, Any] = TypeAdapter(ToolAnswer).json_schema()
"""The JSON schema of a method tool's ``structuredContent`` (MCP's ``outputSchema``)."""


def description_of(docstring: str) -> str:
    """A graph's tool description from its module docstring: its summary, then the
    ``When it pays:`` and ``Cost:`` paragraphs when it has them, on one line, in plain text."""
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", docstring.strip())]
    kept = [p for p in paragraphs[1:] if p.startswith(SECTIONS)]
    return " ".join([paragraphs[0], *kept]).replace("``", "`")


def graph_description(spec: str, root: Path) -> str:
    """The description of the graph ``langgraph.json`` serves from ``spec``
    (``./path/to/module.py:variable``), read from the module's docstring without importing it."""
    path = root / spec.split(":")[0]
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not docstring:
        raise ValueError(f"{path}: the graph's module has no docstring to describe its MCP tool by")
    return description_of(docstring)


def described_graphs(config: Mapping[str, Any], root: Path) -> dict[str, dict[str, str]]:
    """``langgraph.json``'s ``graphs`` (``config``), each in the dict form with the description its
    module's docstring gives."""
    entries = config["graphs"]
    specs = {name: e["path"] if isinstance(e, Mapping) else e for name, e in entries.items()}
    return {
        name: {"path": spec, "description": graph_description(spec, root)} for name, spec in specs.items()
    }


def tool_result(graph_id: str, output: Any) -> tuple[str, dict[str, Any], bool]:
    """A tool call's result from the run's ``output`` (the server's JSON of it): its JSON text,
    its ``structuredContent``, and whether the run failed (the server's ``__error__``: its
    exception's type and message, which the server's own API returns to the same caller)."""
    if isinstance(output, Mapping) and "__error__" in output:
        error = output["__error__"] or {}
        kind, message = str(error.get("error") or "Error"), str(error.get("message") or "")
        structured: dict[str, Any] = {"error": kind, "message": message}
        return (f"{kind}: {message}" if message else kind), structured, True
    structured = answer_of(output) if graph_id in METHODS else dict(output or {})
    return json.dumps(structured, ensure_ascii=False), structured, False


def answer_of(output: Mapping[str, Any]) -> dict[str, Any]:
    """A method's run output as a ``ToolAnswer``: every citation's fields, the passages' sources
    (not their text)."""
    answer: dict[str, Any] = {
        "answer": str(output.get("answer") or ""),
        "outcome": output.get("outcome") or "no_evidence",
        "stop_reason": str(output.get("stop_reason") or ""),
        "citations": [dict(c) for c in output.get("citations") or []],
        "sources": list(dict.fromkeys(_source(d) for d in output.get("documents") or [])),
        "usage": dict(output.get("usage") or {}),
    }
    if output.get("confidence"):
        answer["confidence"] = output["confidence"]
    return answer


def _source(document: Mapping[str, Any]) -> str:
    """A passage's source, from the server's JSON of a LangChain ``Document``."""
    return str((document.get("metadata") or {}).get("source") or "")


def main(argv: list[str]) -> int:
    """``python -m rag_graphs.serve.mcp_tools langgraph.json``: write each graph's description
    from its module's docstring into the file (its graphs in the dict form)."""
    if len(argv) != 1:
        print("usage: python -m rag_graphs.serve.mcp_tools PATH/langgraph.json", file=sys.stderr)
        return 2
    path = Path(argv[0])
    config = json.loads(path.read_text(encoding="utf-8"))
    config["graphs"] = described_graphs(config, path.parent)
    path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
