"""Numbered context for prompts, and citations parsed back out of answers.

Passages are shown to the model as ``[n]`` blocks, fenced as data
(``rag_graphs.prompts.fencing``: a passage cannot close its fence early); the
answer cites them as ``[n]``. A marker that points at no passage is dropped,
so every citation resolves to a stored chunk.

One function numbers passages, ``number_passages``, and it returns the numbering it
showed with the text: ``shown[n - 1]`` is the passage the prompt showed as ``[n]``, with the
text it showed (one id shown with two texts is two numbers).
Answers are parsed against exactly that list (``extract_citations``), never against
another ordering of the same passages, so ``[n]`` in an answer is the passage the
model saw as ``[n]``. A numbering can go on across prompts (ReAct's observations,
search after search): a passage keeps the number it was first shown with, a new one
gets the next number.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from langchain_core.documents import Document

from rag_graphs.prompts.fencing import fence
from rag_graphs.state import Citation

_MARKER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
QUOTE_CHARS = 240
NO_PASSAGES = "(no passages were found)"


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


class Numbered(NamedTuple):
    """Passages as a prompt shows them, and what each number stands for."""

    text: str
    """The numbered, fenced passages (``NO_PASSAGES`` when there are none)."""
    shown: list[Document]
    """The numbering: ``shown[n - 1]`` was shown as ``[n]`` (in this prompt or, for a numbering
    carried on, an earlier one). Citation markers resolve against this list."""


def number_passages(docs: Sequence[Document], numbering: Sequence[Document] = ()) -> Numbered:
    """Render ``docs`` as numbered, fenced passages: ``[n]``, then ``(source)`` and the text as data.

    Without ``numbering`` the passages are ``[1]`` to ``[len(docs)]`` in the order given. With
    the numbering an earlier prompt returned, the numbers go on: a passage (by chunk id) that
    it holds keeps its number, a new one gets the next. The label is inside the fence too: a
    file name is as untrusted as the file.
    """
    shown = list(numbering)
    number = {_identity(d): n for n, d in enumerate(shown, start=1) if d.id is not None}
    blocks = []
    for doc in docs:
        n = number.get(_identity(doc)) if doc.id is not None else None
        if n is None:
            shown.append(doc)
            n = len(shown)
            if doc.id is not None:
                number[_identity(doc)] = n
        blocks.append(numbered_passage(n, doc))
    return Numbered("\n\n".join(blocks) or NO_PASSAGES, shown)


def _identity(doc: Document) -> tuple[str | None, str]:
    """What a number stands for: a passage by its id and the text shown. A passage found again
    with other text under the same id (compressed for another query; a retriever of the user's
    that answers one id with two texts) gets a number of its own, so a citation quotes the text
    the model read under its number, never the other text (attack round 4, issue 50 item 12)."""
    return doc.id, doc.page_content


def format_context(docs: list[Document]) -> str:
    """``docs`` numbered ``[1]`` to ``[n]`` for a prompt whose reply cites nothing (an
    intermediate answer, a check); an answer's prompt keeps its ``number_passages`` numbering."""
    return number_passages(docs).text


def numbered_passage(number: int, doc: Document) -> str:
    """One passage as prompts show it: ``[n]``, then its label and text fenced as data. A marker
    inside the label or the text (``[2]``, a document's own reference or a planted one; a source
    or kind named ``[2]`` by a retriever of the user's) is shown as ``⟦2⟧``: a model that copies
    the passage's words copies no citation of ours (attack round 3: a hit whose text carried
    ``[2]`` had it resolved as a citation of passage 2; round 4: the same in its source name)."""
    shown = _MARKER.sub(lambda m: f"⟦{m.group(1)}⟧", f"({label(doc)})\n{doc.page_content}")
    return f"[{number}]\n" + fence(shown)


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
    """Citations for the ``[n]`` markers in ``answer`` that point at ``docs``: the numbering
    the answer's prompt showed (``Numbered.shown``), ``docs[n - 1]`` for ``[n]``.

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
