"""The state every graph shares, and the reducers that merge node updates.

The input is ``{"question": str}``; the output always carries ``answer``,
``citations``, ``documents``, ``steps``, ``usage``, ``stop_reason`` and ``outcome``
(docs/architecture.md's one input / one output contract), so notebooks, the CLI and the
evaluator loop over every method the same way.

Control flow reads typed fields only. ``steps`` is the reasoning chain for
people and traces: nodes append to it and nothing reads it to decide. What a
loop needs (the latest retrieval, the queries searched, the hop count, the
intermediate answers) has a field of its own here; what only one method needs
lives in that method's extension of ``RagState`` (``ReactState``, ...).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired

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
    """One entry of the reasoning chain, in the order it happened (output only)."""

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


class Search(TypedDict):
    """One query searched in the store and the chunk ids it found, best first."""

    query: str
    doc_ids: list[str]
    hop: NotRequired[int]  # the retrieval round it ran in (1: the first); fusion weighs rounds


class SubAnswer(TypedDict):
    """An intermediate answer: a sub-question (or hop query) and what its passages said."""

    query: str
    answer: str


def add_usage(left: Usage | None, right: Usage | None) -> Usage:
    """Sum two usage dicts key by key."""
    out: dict[str, int] = {k: int(v) for k, v in (left or {}).items()}  # type: ignore[call-overload]
    for key, value in (right or {}).items():
        out[key] = out.get(key, 0) + int(value)  # type: ignore[call-overload]
    return out  # type: ignore[return-value]


class FusedRound(TypedDict):
    """A retrieval round's update of ``documents`` (``rag_graphs.nodes.retrieve.ranked``): the
    documents the round found, and every document's id with its fused score, best first.
    Only the round's own hits travel in the update (and the stream), not every document the
    run gathered; ``merge_documents`` puts the whole ranking together."""

    new: list[Document]
    order: list[tuple[str, float]]


def merge_documents(left: list[Document] | None, right: list[Document] | FusedRound | None) -> list[Document]:
    """Append documents not seen before (by id), keeping first-seen order; a ``FusedRound``
    instead replaces held documents by the round's copies of them, adds the rest and orders
    all by the fused ranking (each a copy stamped with its ``metadata["rrf_score"]``; any it does
    not rank keep their order after it). The held documents are never changed in place: the
    previous state, the round's update and the search cache may hold the same objects."""
    if isinstance(right, dict):
        by_id = {d.id: d for d in left or []} | {d.id: d for d in right["new"]}
        ranked = []
        for i, score in right["order"]:
            if (doc := by_id.pop(i, None)) is not None:
                ranked.append(doc.model_copy(update={"metadata": {**doc.metadata, "rrf_score": score}}))
        return ranked + list(by_id.values())
    out = list(left or [])
    seen = {d.id for d in out}
    for doc in right or []:
        if doc.id not in seen:
            seen.add(doc.id)
            out.append(doc)
    return out


Outcome = Literal["answered", "budget_exhausted", "unreliable", "no_evidence"]
"""How a run ended, for callers that must not parse ``stop_reason`` or scan ``steps``:
``answered``; ``budget_exhausted`` (a loop ran out of hops/steps before judging its
information enough: the answer is from what was gathered and says so); ``unreliable``
(the method's own check rejected its answer: Self-RAG); ``no_evidence`` (the run searched
but answers from no passage, or the answer says it does not know)."""

Confidence = Literal["high", "medium", "low"]

StopKind = Literal[
    "enough",  # the method judged what it gathered enough (or gave its final answer)
    "budget",  # a hop, step or follow-up budget ran out
    "repeated",  # the next search repeats one already made (or the last found nothing new)
    "no_query",  # no next query was proposed
    "no_form",  # the model's reply followed none of the method's forms
    "no_follow_up",  # IterDRAG's "No follow-up needed"
    "no_evidence",  # no relevant passage to answer from (Self-RAG)
    "single_pass",  # a method without a loop
]
"""Why a run stopped looking, for routers: they read this, never ``stop_reason``'s words."""


@dataclass(frozen=True)
class Unset:
    """What a field of a method's own state reads as before any node of the run wrote it, declared
    on the field: ``needs_retrieval: Annotated[bool, Unset(True)]``. ``begin``
    (``rag_graphs.nodes.fresh``) puts it back for every new question on a thread. LangGraph
    takes the field as a plain value (the marker is no reducer); fields without one read as None.
    ``IngestOptions``' access labels use it too, as their default: unset (filled from the context)
    is then told apart from a label the caller gave, ``None`` included."""

    value: Any


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
    stop_reason: str  # why the run stopped looking: "enough", a budget, a repeated query...
    outcome: Outcome  # how the run ended (see ``Outcome``)
    confidence: Confidence  # methods that check their own answer (Self-RAG) say how far to trust it


class RagState(InputState, OutputState, total=False):
    """Working state shared by the methods; every field has one meaning in all of them."""

    query: str
    """The text the next ``retrieve`` searches (the question when unset)."""
    searches: Annotated[list[Search], operator.add]
    """Every query searched in this run with its hits, in order (repeat detection, per-query fan-out)."""
    hops: Annotated[int, operator.add]
    """Retrieval rounds run (a batch of queries searched side by side is one); ``max_hops`` counts these."""
    latest: list[str]
    """Chunk ids the latest retrieval round found, best first ([] when it searched nothing new)."""
    latest_repeated: bool
    """The latest retrieval round was skipped: every query it was given had been searched already."""
    subqueries: list[str]
    """Queries or sub-questions a method fans out to, in plan order."""
    sub_answers: Annotated[list[SubAnswer], operator.add]
    """Intermediate answers, hop by hop or sub-question by sub-question."""
    evidence: list[Document]
    """The passages the answer reads when a method selected them (graded, refined, arranged);
    unset: every gathered document."""
    shown: list[Document]
    """The numbering the answer was written under: ``shown[n - 1]`` is the passage the model
    was shown as ``[n]`` (``rag_graphs.text.citations.number_passages``), what the answer's
    markers resolve against. Answer nodes set it; ReAct carries it on from one search's
    observation to the next, so a passage keeps its number to the end of the run."""
    found_correct: bool
    """The latest grading judged at least one passage correct (CRAG's and Self-RAG's grader)."""
    stop_kind: StopKind | None
    """Why the loop stops (``nodes.loop.stop_update``; None: it goes on). Routers read this;
    ``stop_reason`` says the same in words for the output."""
    stops_for: list[str]
    """Where this run stops for a person: ``RagContext.interrupts`` as the run began (``begin``
    writes it). A resume is a new invocation whose context may leave ``interrupts`` out (a client
    answering with ``Command(resume=...)`` alone); read from here, the run still stops where it
    said it would and reads the answer, instead of taking the default and dropping it."""


def usage(**counts: Any) -> Usage:
    """Shorthand for a usage update, e.g. ``usage(retrievals=1)``."""
    return {k: int(v) for k, v in counts.items() if v}  # type: ignore[return-value]


def searched(state: RagState) -> list[str]:
    """Every query searched so far in this run, in order."""
    return [s["query"] for s in state.get("searches", [])]
