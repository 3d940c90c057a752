"""GraphRAG (Edge et al. 2024): global and local search over the collection's community reports
(build them first: ``rag-graphs graph communities``).

    START -> choose --(global)--> load_reports --(one Send per batch)--> map_reports -> reduce -> generate
                    \\--(local)--> retrieve -> local_context -> generate -> END

``RagContext.graphrag_search`` picks the search; ``auto`` (the default) sends the question
classifier's ``global_summary`` questions ("what do these documents have in common?") to global
search and every other question to local search (``rag_graphs.text.question_kinds``, no model call).

**Global**: the readable reports of ``graphrag_level`` are mapped in batches of
``graphrag_batch`` (one structured call each, side by side) to key points scored 0-100;
``reduce`` keeps the best points within the context budget and, so that the answer cites stored
passages, the member passages of the reports those points came from, one report after another,
nearest the question first. **Local**: graph search's passages for the question, and the
reports of the communities its linked entities belong to. Either way the shared generate node
answers from the notes (points or reports) and the numbered passages, and cites the passages.

A report is shown only when every chunk it was written from is stored and the run may read it
(``rag_graphs.search.reports``); local search links only entities one of whose chunks the run
may read (``rag_graphs.search.derived.nameable``), so its step names no other tenant's entity.
A reply the map step cannot parse gives no points; when no batch gave a point and some replies
could not be read, the answer reads the unread batches' reports' passages (their reports were
never judged, not judged irrelevant), and the reduce step says so; when every reply was read and
none found a point, it answers from no passage (``no_evidence``).

When it pays: global questions about a whole corpus ("what do these documents have in common?"),
which no handful of passages answers; local questions get their entities' community context.
Cost: global search: one model call per ``graphrag_batch`` (8) reports of the chosen level, plus
the answer; local search: one search and one model call.
"""

from __future__ import annotations

import operator
from typing import Annotated, Literal

from langchain_core.documents import Document
from langgraph.graph import END, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from rag_graphs.config.context import RagContext
from rag_graphs.config.runtime import get_context
from rag_graphs.entity_graph.linking import link_question
from rag_graphs.entity_graph.rows import has_graph
from rag_graphs.llm.calls import Body
from rag_graphs.llm.structured import structured
from rag_graphs.nodes import make_generate, retrieve
from rag_graphs.nodes.builder import BEGIN, compile_method, new_builder
from rag_graphs.nodes.chat import calls_usage, chat_model
from rag_graphs.nodes.events import emit, step
from rag_graphs.nodes.model_node import model_node
from rag_graphs.prompts import load_prompt
from rag_graphs.prompts.fencing import fence
from rag_graphs.search.derived import nameable
from rag_graphs.search.own import refuse_own_retriever
from rag_graphs.search.reports import (
    entity_reports,
    level_reports,
    member_passages,
    question_reports,
)
from rag_graphs.search.retrieval import embeddings_for, index_for
from rag_graphs.search.structures import refuse_missing
from rag_graphs.state import RagState, usage
from rag_graphs.text.question_kinds import classify_by_examples, examples_file

_MAP = load_prompt("graphrag_map")


class Point(TypedDict):
    """A key point of the map step: its text, its 0-100 score, the ids of the reports it draws on."""

    text: str
    score: int
    reports: list[str]


class GraphragState(RagState, total=False):
    """The shared state and what only GraphRAG's nodes read."""

    search: Literal["global", "local"]
    """The search this run takes (``choose``)."""
    reports: list[Document]
    """The reports read: the level's (global) or the linked entities' communities' (local)."""
    batch: list[Document]
    """One map task's reports (the payload of its ``Send``)."""
    points: Annotated[list[Point], operator.add]
    """Every batch's key points (global)."""
    unread: Annotated[list[str], operator.add]
    """Ids of the reports of batches whose map reply could not be parsed (global)."""
    notes: list[str]
    """What the answer prompt shows besides the passages: the best points, or the reports."""


class KeyPoint(BaseModel):
    description: str = Field(description="one key point that helps answer the question")
    score: int = Field(description="how important the point is for the answer, 0-100")
    """Clamped to 0-100 when read: a score out of range costs the point its rank, not the batch."""
    reports: list[int] = Field(default_factory=list, description="numbers of the reports it comes from")


class KeyPoints(BaseModel):
    """The key points of a batch of reports for the question (none when they do not help)."""

    points: list[KeyPoint]


def budget_chars(ctx: RagContext) -> int:
    """Half the context budget in characters: one half for the notes, one for the passages."""
    return ctx.graphrag_context_tokens * 4 // 2


def choose(state: GraphragState, runtime: Runtime[RagContext]) -> dict:
    """Refuse a collection without its entity graph or reports (``catalog.REQUIRES``, one line
    naming the commands that build them); pick global or local search (``graphrag_search``)."""
    ctx = get_context(runtime)
    refuse_own_retriever(ctx, "the graphrag method (the collection's community reports)")
    refuse_missing(ctx, "graphrag")  # what catalog.REQUIRES declares: the entity graph, the reports
    if ctx.graphrag_search != "auto":
        search, why = ctx.graphrag_search, "RagContext.graphrag_search"
    else:
        vote = classify_by_examples(
            state["question"], embeddings_for(ctx), examples_file(ctx.router_examples)
        )
        search = "global" if vote.kind == "global_summary" else "local"
        why = f"question kind {vote.kind} (nearest example: {vote.nearest!r})"
    emit("end", search=search)
    return {"search": search, "steps": [step("decide", text=f"{search} search: {why}")]}


def route_search(state: GraphragState) -> Literal["load_reports", "retrieve"]:
    """Global search maps the reports; local search starts from the question's passages."""
    return "load_reports" if state.get("search") == "global" else "retrieve"


def load_reports(state: GraphragState, runtime: Runtime[RagContext]) -> dict:
    """The readable reports of ``graphrag_level`` (or the coarsest level below it)."""
    ctx = get_context(runtime)
    level, reports = level_reports(ctx, ctx.graphrag_level)
    text = f"{len(reports)} readable community reports of level {level}"
    emit("end", reports=len(reports), level=level)
    return {
        "reports": reports,
        "steps": [step("retrieve", query=state["question"], doc_ids=[str(r.id) for r in reports], text=text)],
        "usage": usage(retrievals=1),
    }


def fan_out(state: GraphragState, runtime: Runtime[RagContext]) -> list[Send] | Literal["reduce"]:
    """One ``map_reports`` task per ``graphrag_batch`` reports, run side by side."""
    ctx = get_context(runtime)
    reports, size = state.get("reports", []), ctx.graphrag_batch
    payload = {"question": state["question"]}
    return [
        Send("map_reports", payload | {"batch": reports[i : i + size]}) for i in range(0, len(reports), size)
    ] or "reduce"


def format_reports(reports: list[Document]) -> str:
    """Reports numbered for the map prompt, each fenced as data."""
    return "\n\n".join(f"Report {n}:\n{fence(r.page_content)}" for n, r in enumerate(reports, 1))


@model_node
def map_reports(state: GraphragState, ctx: RagContext) -> Body[dict]:
    """Key points of one batch of reports for the question, scored 0-100 (a reply that cannot
    be parsed gives none, and the step says so)."""
    batch = state.get("batch", [])
    messages = _MAP.format_messages(question=state["question"], reports=format_reports(batch))
    out = yield from structured(chat_model(ctx), messages, KeyPoints, KeyPoints(points=[]))
    ids = [str(r.id) for r in batch]
    points: list[Point] = []
    for p in out.value.points:
        cited = [ids[n - 1] for n in p.reports if 1 <= n <= len(ids)] or ids  # unattributed: its batch
        score = max(0, min(100, p.score))
        if score > 0 and p.description.strip():
            points.append({"text": p.description.strip(), "score": score, "reports": cited})
    text = f"{len(points)} key points" + (" (reply not parsed)" if out.method == "default" else "")
    emit("end", points=len(points))
    return {
        "points": points,
        "unread": ids if out.method == "default" else [],
        "steps": [step("note", doc_ids=ids, text=text)],
        "usage": calls_usage(out.calls),
    }


def within(texts: list[str], limit: int) -> int:
    """How many of ``texts``, in order, fit in ``limit`` characters (at least one, if any)."""
    used, n = 0, 0
    for text in texts:
        used += len(text)
        if n and used > limit:
            break
        n += 1
    return n


def interleave(groups: list[list[Document]]) -> list[Document]:
    """The groups' documents one group after another, round by round (each group's best, then
    each group's second...), each once: every group reaches the context before any has two."""
    out: dict[str, Document] = {}
    for rank in range(max((len(g) for g in groups), default=0)):
        for group in groups:
            if rank < len(group):
                out.setdefault(str(group[rank].id), group[rank])
    return list(out.values())


def reduce(state: GraphragState, runtime: Runtime[RagContext]) -> dict:
    """The best points within half the budget, and the passages of the reports they came from
    (one report after another) within the other half: the answer's notes and passages."""
    ctx = get_context(runtime)
    ranked = sorted(state.get("points", []), key=lambda p: -p["score"])
    notes = [f"(importance {p['score']}) {p['text']}" for p in ranked]
    kept = ranked[: within(notes, budget_chars(ctx))]
    by_id = {str(r.id): r for r in state.get("reports", [])}
    chosen = [i for p in kept for i in p["reports"]] or state.get("unread", [])  # unread: never judged
    sources = [by_id[i] for i in dict.fromkeys(chosen) if i in by_id]
    passages = interleave(member_passages(ctx, sources, state["question"]))
    passages = passages[: within([d.page_content for d in passages], budget_chars(ctx))]
    ids = [str(d.id) for d in passages]
    emit("end", points=len(kept), doc_ids=ids)
    text = f"{len(kept)} of {len(ranked)} key points, from {len(sources)} reports"
    if not kept and sources:
        text = f"no key points; {len(sources)} reports whose map reply was not read, unranked by the model"
    return {
        "notes": notes[: len(kept)],
        "documents": passages,
        "evidence": passages,
        "searches": [{"query": state["question"], "doc_ids": ids}],
        "latest": ids,
        "hops": 1,
        "steps": [step("retrieve", query=state["question"], doc_ids=ids, text=text)],
        "usage": usage(retrievals=1, hops=1),
    }


def local_context(state: GraphragState, runtime: Runtime[RagContext]) -> dict:
    """The reports of the communities of the question's linked entities (graph search's linking,
    kept to the entities the run may read of: ``search.derived.nameable``; the reports nearest the
    question when none links), and the passages, within the budget."""
    ctx = get_context(runtime)
    index = index_for(ctx)
    keys: list[str] = []
    if has_graph(index):  # an entity row serves every tenant: only entities of readable chunks
        options = ctx.graph_search
        linked = link_question(
            index, state["question"], threshold=options.link_threshold, limit=options.seeds
        )
        keys = nameable(ctx, linked.seeds)
    reports = entity_reports(ctx, keys) if keys else question_reports(ctx, state["question"])
    notes = [r.page_content for r in reports]
    reports = reports[: within(notes, budget_chars(ctx))]
    passages = list(state.get("documents", []))
    passages = passages[: within([d.page_content for d in passages], budget_chars(ctx))]
    how = (
        f"linked entities {', '.join(keys[:8])}"
        if keys
        else "no linked entity: the reports nearest the question"
    )
    text = f"{len(reports)} community reports ({how}), {len(passages)} passages"
    emit("end", reports=[str(r.id) for r in reports])
    return {
        "reports": reports,
        "notes": notes[: len(reports)],
        "evidence": passages,
        "steps": [step("note", doc_ids=[str(r.id) for r in reports], text=text)],
        "usage": usage(retrievals=1),
    }


def format_notes(state: GraphragState) -> str:
    """The answer prompt's notes (key points or reports), each fenced: text written from documents."""
    return "\n".join(f"- {fence(n)}" for n in state.get("notes", [])) or "(none)"


def build() -> StateGraph:
    """The uncompiled graph."""
    builder = new_builder(GraphragState)
    builder.add_node("choose", choose)
    builder.add_node("load_reports", load_reports)
    builder.add_node("map_reports", map_reports)
    builder.add_node("reduce", reduce)
    builder.add_node("retrieve", retrieve)
    builder.add_node("local_context", local_context)
    # the extract reader answers local search; global search's answer is a summary of themes
    local = make_generate(
        "graphrag_reduce", notes=format_notes, extracts=lambda s: s.get("search") == "local"
    )
    builder.add_node("generate", local)
    builder.add_edge(BEGIN, "choose")
    builder.add_conditional_edges("choose", route_search, ["load_reports", "retrieve"])
    builder.add_conditional_edges("load_reports", fan_out, ["map_reports", "reduce"])
    builder.add_edge("map_reports", "reduce")
    builder.add_edge("reduce", "generate")
    builder.add_edge("retrieve", "local_context")
    builder.add_edge("local_context", "generate")
    builder.add_edge("generate", END)
    return builder


graph = compile_method(build(), "graphrag")
