"""The rows of a collection's GraphRAG community reports (``rag_graphs.ingestion.community_reports``
writes them; the graphrag method reads them).

A report is a ``Document`` in ``<collection>_communities``, a chunk collection of its own embedded
with the chunk collection's model, so it is searched as RAPTOR's tree is (``report_index``, then
``search`` / ``where``). Its metadata: ``kind`` (``REPORT_KIND``), ``level`` (0 = finest),
``parent`` (the community one level up, "" at the top), ``community``, ``title``, ``summary``,
``rating`` (0-10), ``findings``, ``entities`` (member entity keys), ``chunks`` (every chunk whose
text the report was written from, sub-communities' included), ``tenant`` / ``tags`` (the labels all
those chunks share) and ``source`` ("").

Here, below the build, because a report must never outlive a chunk it read: ``ChunkIndex`` calls
``forget_reports`` (through ``rag_graphs.store.derived``) before it deletes chunks, and the index
must not import what builds on it. A report lists all its chunks, so one query per batch of ids
finds every level's reports over them: no walk up the parents is needed.
"""

from __future__ import annotations

import hashlib
from typing import Protocol, Self, TypeVar

from langchain_core.documents import Document

from rag_graphs.store.collection import QUERY_LIMIT, Collection
from rag_graphs.store.filters import quote
from rag_graphs.store.tree import Tree


class Source(Tree, Protocol):
    """What the reports need of a collection (a ``ChunkIndex``: the chunks, or the reports beside
    them; named by a protocol because the index imports this module)."""

    collection: str

    def derived(self, name: str) -> Collection: ...

    def add(self, chunks: list[Document], vectors: list[list[float]] | None = None) -> int: ...

    def beside(self, collection: str) -> Self: ...

    def mark_changed(self) -> None: ...


S = TypeVar("S", bound=Source)


REPORT_KIND = "community_report"
CHUNKS_FIELD = "chunks"
_ID_BATCH = 256


def reports_collection(collection: str) -> str:
    """The collection that holds ``collection``'s community reports."""
    return f"{collection}_communities"


def report_id(level: int, chunk_ids: list[str]) -> str:
    """A report's stable id: its level and its sorted member chunk ids, hashed, so the same
    community built again finds its report stored (builds are resumable and idempotent)."""
    members = "|".join(sorted(set(map(str, chunk_ids))))
    return hashlib.sha256(f"community|{level}|{members}".encode()).hexdigest()[:32]


def report_text(title: str, summary: str, findings: list[str]) -> str:
    """A report as the text that is embedded and read: title, summary, one line per finding."""
    lines = "\n".join(f"- {f}" for f in findings)
    return "\n\n".join(part for part in (title, summary, lines) if part)


def report_index(index: S) -> S:
    """The reports collection (a ``ChunkIndex``) beside the chunk collection ``index``: same
    store, same embedding model."""
    return index.beside(reports_collection(index.collection))


def add_reports(index: Source, reports: list[Document]) -> None:
    """Embed and store ``reports`` beside the chunk collection ``index``; ids already stored are
    skipped. Each report needs its ``id`` (``report_id``). The caller flushes when done."""
    if not reports:
        return
    rows = [
        Document(page_content=r.page_content, metadata={**r.metadata, "chunk_id": str(r.id)}) for r in reports
    ]
    report_index(index).add(rows)
    index.mark_changed()  # cached graphrag answers read the reports: a new report is a change


def reports_over(reports: Tree, chunk_ids: list[str]) -> list[str]:
    """Ids of the stored reports that list any of ``chunk_ids`` among their chunks."""
    found: list[str] = []
    ids = list(dict.fromkeys(map(str, chunk_ids)))
    for i in range(0, len(ids), _ID_BATCH):
        values = ", ".join(quote(x) for x in ids[i : i + _ID_BATCH])
        expr = f"json_contains_any({CHUNKS_FIELD}, [{values}])"
        found += [str(d.id) for d in reports.where(expr, limit=QUERY_LIMIT)]
    return list(dict.fromkeys(found))


def forget_reports(reports: Tree, chunk_ids: list[str]) -> int:
    """Delete every report written from any of ``chunk_ids`` (at every level); return how many.
    The next build writes them again from the chunks that are left."""
    stale = reports_over(reports, chunk_ids)
    return reports.delete_ids(stale) if stale else 0
