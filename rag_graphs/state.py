"""The state every graph shares, and the reducers that merge node updates.

The input is ``{"question": str}``; the output always carries ``answer``,
``citations``, ``documents``, ``steps`` and ``usage`` (DESIGN.md's one
input / one output contract), so notebooks, the CLI and the evaluator loop
over every method the same way. Methods extend ``RagState`` with their own
working fields.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal

from langchain_core.documents import Document
from typing_extensions import TypedDict


class Citation(TypedDict):
    """One cited chunk; ``chunk_id`` always resolves to a stored chunk."""

    marker: int  # the [n] the answer uses
    chunk_id: str
    source: str
    cref: str  # first Docling self-ref of the chunk's items
    kind: str  # text | table | picture
    page: int  # first page, -1 when the format has no pages
    quote: str
    explicit: bool  # True when the model wrote [n]; False when inferred from context


class Step(TypedDict, total=False):
    """One entry of the reasoning chain, in the order it happened."""

    node: str
    kind: Literal["retrieve", "generate", "decide", "rewrite", "grade", "note", "error"]
    query: str
    doc_ids: list[str]
    text: str


class Usage(TypedDict, total=False):
    """Cost counters; merged by summing."""

    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    retrievals: int
    hops: int


def add_usage(left: Usage | None, right: Usage | None) -> Usage:
    """Sum two usage dicts key by key."""
    out: dict[str, int] = dict(left or {})
    for key, value in (right or {}).items():
        out[key] = out.get(key, 0) + int(value)
    return out  # type: ignore[return-value]


def merge_documents(left: list[Document] | None, right: list[Document] | None) -> list[Document]:
    """Append documents not seen before (by id), keeping first-seen order."""
    out = list(left or [])
    seen = {d.id for d in out}
    for doc in right or []:
        if doc.id not in seen:
            seen.add(doc.id)
            out.append(doc)
    return out


class InputState(TypedDict):
    """What a caller passes."""

    question: str


class OutputState(TypedDict, total=False):
    """What every graph returns."""

    answer: str
    citations: list[Citation]
    documents: Annotated[list[Document], merge_documents]
    steps: Annotated[list[Step], operator.add]
    usage: Annotated[Usage, add_usage]


class RagState(InputState, OutputState, total=False):
    """Working state shared by the methods (each uses the fields it needs)."""

    query: str  # the query the next retrieval runs
    queries: Annotated[list[str], operator.add]  # every query searched, in order
    subqueries: list[str]  # queries or sub-questions a method fans out to, in plan order
    notes: Annotated[list[str], operator.add]  # intermediate answers gathered hop by hop
    context: list[Document]  # passages the answer uses when a method filters (default: documents)
    enough: bool  # the last decide node judged the gathered information sufficient
    stop_reason: str  # why a loop ended: "enough", "budget", "repeated query"


def usage(**counts: Any) -> Usage:
    """Shorthand for a usage update, e.g. ``usage(retrievals=1)``."""
    return {k: int(v) for k, v in counts.items() if v}  # type: ignore[return-value]
