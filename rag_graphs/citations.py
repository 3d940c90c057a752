"""Numbered context for prompts, and citations parsed back out of answers.

Passages are shown to the model as ``[n]`` blocks, fenced as data
(``prompts.fencing``: a passage cannot close its fence early); the
answer cites them as ``[n]``. A marker that points at no passage is dropped,
so every citation resolves to a stored chunk.
"""

from __future__ import annotations

import re
from pathlib import Path

from langchain_core.documents import Document

from prompts.fencing import fence
from rag_graphs.state import Citation

_MARKER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
QUOTE_CHARS = 240


def label(doc: Document) -> str:
    """Human-readable provenance, e.g. ``report.pdf, p. 4, table``."""
    meta = doc.metadata
    source = str(meta.get("source", "?"))
    parts = [source if "://" in source else Path(source).name]  # web pages keep their URL
    if (page := meta.get("page", -1)) not in (-1, None):
        parts.append(f"p. {page}")
    if meta.get("kind") not in (None, "text"):
        parts.append(str(meta["kind"]))
    return ", ".join(parts)


def format_context(docs: list[Document]) -> str:
    """Render documents as numbered, fenced passages: ``[n]``, then ``(source)`` and the text as data.

    The label is inside the fence too: a file name is as untrusted as the file.
    """
    if not docs:
        return "(no passages were found)"
    return "\n\n".join(numbered_passage(i, doc) for i, doc in enumerate(docs, start=1))


def numbered_passage(number: int, doc: Document) -> str:
    """One passage as prompts show it: ``[n]``, then its label and text fenced as data."""
    return f"[{number}]\n" + fence(f"({label(doc)})\n{doc.page_content}")


def _citation(marker: int, doc: Document, explicit: bool) -> Citation:
    crefs = doc.metadata.get("crefs") or [""]
    return Citation(
        marker=marker,
        chunk_id=str(doc.id),
        source=str(doc.metadata.get("source", "")),
        cref=str(crefs[0]),
        kind=str(doc.metadata.get("kind", "text")),
        page=int(doc.metadata.get("page", -1) if doc.metadata.get("page") is not None else -1),
        quote=doc.page_content[:QUOTE_CHARS],
        explicit=explicit,
    )


def extract_citations(answer: str, docs: list[Document]) -> list[Citation]:
    """Citations for the ``[n]`` markers in ``answer`` that point at ``docs``.

    When the model wrote no valid marker (weak models often don't), every
    passage it was shown is cited with ``explicit=False``: the answer came
    from that context, and the flag keeps the difference visible.
    """
    numbers: list[int] = []
    for group in _MARKER.findall(answer):
        for n in group.split(","):
            value = int(n)
            if 1 <= value <= len(docs) and value not in numbers:
                numbers.append(value)
    if numbers:
        return [_citation(n, docs[n - 1], True) for n in numbers]
    return [_citation(i, doc, False) for i, doc in enumerate(docs, start=1)]
