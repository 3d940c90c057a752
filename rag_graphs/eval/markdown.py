"""Data in Markdown tables: one helper every table of the evaluator's reports writes cells with."""

from __future__ import annotations

from rag_graphs.support.terminal import visible


def cell(text: object) -> str:
    """Data (a method name, an evaluator's key) as one Markdown table cell: control characters
    shown as escapes (``visible``), ``|`` escaped so it cannot open a column of its own."""
    return visible(text).replace("|", "\\|")
