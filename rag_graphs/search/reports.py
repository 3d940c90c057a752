"""The read side of GraphRAG's community reports (``rag_graphs.store.reports`` stores them; the
``graphrag`` method reads them): the reports of one level, the reports of named entities'
communities, and the passages a report was written from, each under the access rule
(``rag_graphs.search.derived``: a report is shown only when the run may read every chunk in its
``metadata["chunks"]``)."""

from __future__ import annotations

import dataclasses

from langchain_core.documents import Document

from rag_graphs.config.context import RagContext
from rag_graphs.config.specs import all_of
from rag_graphs.search import derived
from rag_graphs.search.retrieval import index_for, search
from rag_graphs.store.collection import QUERY_LIMIT
from rag_graphs.store.filters import ids_filter, quote
from rag_graphs.store.reports import REPORT_KIND, reports_collection

MAX_MEMBERS = 256
"""Most member passages ranked for one answer (one dense search restricted to their ids)."""


def report_context(ctx: RagContext) -> RagContext:
    """``ctx`` pointed at the collection's community reports."""
    return dataclasses.replace(ctx, collection=reports_collection(ctx.collection))


def has_reports(ctx: RagContext) -> bool:
    """True when ``RagContext.collection`` has community reports (``rag-graphs graph communities``);
    never with the user's own retriever."""
    return ctx.retriever is None and index_for(report_context(ctx)).count() > 0


def members(report: Document) -> list[str]:
    """The ids of the chunks ``report`` was written from."""
    return [str(c) for c in report.metadata.get("chunks") or []]


def readable_reports(ctx: RagContext, reports: list[Document]) -> list[Document]:
    """The ``reports`` the run may read (all their chunks admitted by its filter), in order."""
    return derived.readable(ctx, reports, members)


def _listed(ctx: RagContext, expr: str | None = None) -> list[Document]:
    """The stored reports ``expr`` matches, most important (``rating``) first, unchecked."""
    kind = f"kind == {quote(REPORT_KIND)}"
    rows = index_for(report_context(ctx)).where(f"{kind} and ({expr})" if expr else kind, limit=QUERY_LIMIT)
    return sorted(rows, key=lambda r: (-float(r.metadata.get("rating") or 0), str(r.id)))


def _level(report: Document) -> int:
    return int(report.metadata.get("level") or 0)


def level_reports(ctx: RagContext, level: int) -> tuple[int, list[Document]]:
    """The readable reports of ``level``, most important (``rating``) first; when that level has
    none (a shallower hierarchy), those of the coarsest level below it. Returns the level read."""
    stored = _listed(ctx)
    chosen = max((_level(r) for r in stored if _level(r) <= level), default=level)
    return chosen, readable_reports(ctx, [r for r in stored if _level(r) == chosen])


def entity_reports(ctx: RagContext, keys: list[str]) -> list[Document]:
    """The readable reports of every community holding one of the entity ``keys``, those holding
    the most of them first, then the finer (more specific) level, then the more important."""
    if not keys:
        return []
    values = ", ".join(quote(k) for k in keys)
    found = readable_reports(ctx, _listed(ctx, f"json_contains_any(entities, [{values}])"))
    wanted = set(keys)

    def order(report: Document) -> tuple[int, int]:
        held = len(wanted & set(report.metadata.get("entities") or []))
        return -held, _level(report)

    return sorted(found, key=order)  # stable: rating order within a tie


def question_reports(ctx: RagContext, question: str) -> list[Document]:
    """The readable reports nearest ``question`` (local search when it links to no entity)."""
    return readable_reports(ctx, search(report_context(ctx), question))


def member_passages(ctx: RagContext, reports: list[Document], question: str) -> list[list[Document]]:
    """Each report's readable member passages, nearest ``question`` first (one dense search over
    all of them under the run's filter): what a report's key points are cited from."""
    ids = list(dict.fromkeys(c for r in reports for c in members(r)))[:MAX_MEMBERS]
    if not ids:
        return [[] for _ in reports]
    only = dataclasses.replace(
        ctx,
        search_filter=all_of(ctx.search_filter, ids_filter(ids)),
        search_mode="dense",
        search_unit="chunk",
    )
    ranked = search(only, question, k=len(ids))
    return [[d for d in ranked if str(d.id) in held] for held in (set(members(r)) for r in reports)]
