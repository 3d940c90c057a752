"""What each stored file version was made from, so an unchanged file is skipped before conversion.

Re-ingesting a folder used to convert every file with Docling again only to find its chunks
stored. After a file's chunks are stored, a record in the auxiliary collection
``<collection>_files`` keeps the file's content hash (SHA-256 of its bytes), its size, the
ingest settings that shape its chunks (``settings``: chunker, embedding model, captioner,
labels...; ``IngestOptions.chunk_settings``), the version's ``doc_hash`` and how many
chunks it gave. The next ingest of the same bytes under the same settings is skipped when
the collection still holds exactly that version: every stored chunk of the source carries
the recorded ``doc_hash`` and there are as many as recorded.

A record is a hint checked against the chunks, never trusted alone: a delete (``--delete``,
``delete_ids``), a relabel, a kill that left a file part-stored or an earlier version that
could not be removed all make the check fail, and the file is converted again as before. The
records of deleted sources are dropped too (``ChunkIndex.delete_source``), to keep them tidy.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_graphs.store.collection import QUERY_LIMIT, Field
from rag_graphs.store.fields import PRIMARY_FIELD
from rag_graphs.store.filters import ids_filter, quote
from rag_graphs.store.writing import store_lock

log = logging.getLogger(__name__)

SUFFIX = "_files"
MAX_CHECKED = QUERY_LIMIT - 1
"""Chunks of one file the check reads back at most (Milvus's query window); bigger files convert."""
BATCH_FILES = 1024
"""Files whose records and chunks one pair of queries checks (``unchanged_many``)."""
_VECTOR = "placeholder"  # Milvus needs a vector field; records are looked up by id only


def files_collection(collection: str) -> str:
    """The auxiliary collection holding ``collection``'s per-file records."""
    return collection + SUFFIX


def file_digest(path: Path) -> tuple[str, int]:
    """SHA-256 of the file's bytes and its size."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


@dataclass(frozen=True)
class FileRecord:
    """What one stored file version was made from."""

    source: str
    content_hash: str
    size: int
    settings: str
    doc_hash: str
    chunks: int
    kinds: dict[str, int] = field(default_factory=dict)

    def row(self) -> dict[str, Any]:
        return {
            PRIMARY_FIELD: _key(self.source),
            _VECTOR: [0.0, 0.0],
            "source": self.source,
            "content_hash": self.content_hash,
            "size": self.size,
            "settings": self.settings,
            "doc_hash": self.doc_hash,
            "chunks": self.chunks,
            "kinds": json.dumps(self.kinds, sort_keys=True),
        }

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> FileRecord:
        return cls(
            source=str(row["source"]),
            content_hash=str(row["content_hash"]),
            size=int(row["size"]),
            settings=str(row["settings"]),
            doc_hash=str(row["doc_hash"]),
            chunks=int(row["chunks"]),
            kinds={str(k): int(v) for k, v in json.loads(row.get("kinds") or "{}").items()},
        )


def _key(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:32]


def _windows(records: dict[str, FileRecord]) -> list[dict[str, FileRecord]]:
    """``records`` in parts whose chunks together fit Milvus's query window (MAX_CHECKED)."""
    parts: list[dict[str, FileRecord]] = []
    total = MAX_CHECKED + 1
    for source, record in records.items():
        if total + record.chunks > MAX_CHECKED:
            parts.append({})
            total = 0
        parts[-1][source] = record
        total += record.chunks
    return parts


class FileRecords:
    """The per-file records of one chunk collection (``index``: a ``ChunkIndex``), for files
    ingested under the chunk ``settings`` (``IngestOptions.chunk_settings``)."""

    def __init__(self, index: Any, settings: str = "") -> None:
        self.index = index
        self.settings = settings
        self.name = files_collection(index.collection)
        self.table = index.derived(self.name)
        self._loaded = False

    def _ready(self) -> bool:
        """True when the records collection exists, loaded (a new process finds it released):
        once per ``FileRecords``, one ingest."""
        ready = self.table.load(again=not self._loaded)
        self._loaded = self._loaded or ready
        return ready

    def unchanged(self, source: str, content_hash: str, size: int) -> FileRecord | None:
        """The record of ``source`` when these bytes under these settings are what the collection
        holds, complete and alone; None when the file must be converted."""
        return self.unchanged_many({source: (content_hash, size)}).get(source)

    def unchanged_many(self, digests: dict[str, tuple[str, int]]) -> dict[str, FileRecord]:
        """``unchanged`` for many files (source -> content hash and size) at once: the records of
        those stored already, complete and alone, by source; the others must be converted.

        Checked BATCH_FILES files at a time, with one read of their records and one read of
        their chunks' ``doc_hash``: Milvus answers a filter on ``source`` (a dynamic field) by
        reading every row of the collection, so one such query per file made re-ingesting an
        unchanged folder quadratic in its size (issue 41: 75 ms a file at 2,500 files).
        """
        if not digests or not self._ready():
            return {}
        sources = list(digests)
        found: dict[str, FileRecord] = {}
        for start in range(0, len(sources), BATCH_FILES):
            recorded = self._recorded(sources[start : start + BATCH_FILES], digests)
            for part in _windows(recorded):
                found |= self._complete(part)
        return found

    def _recorded(self, sources: list[str], digests: dict[str, tuple[str, int]]) -> dict[str, FileRecord]:
        """The records of ``sources`` made from these bytes under these settings (one query)."""
        rows = self.table.rows(ids_filter([_key(s) for s in sources]), ["*"])
        matching: dict[str, FileRecord] = {}
        for row in rows:
            try:
                record = FileRecord.from_row(row)
            except (KeyError, TypeError, ValueError, json.JSONDecodeError):
                continue  # a damaged record is no record
            made_from = (record.content_hash, record.size, record.settings)
            if record.source not in digests or made_from != (*digests[record.source], self.settings):
                continue
            if 0 < record.chunks <= MAX_CHECKED:
                matching[record.source] = record
        return matching

    def _complete(self, records: dict[str, FileRecord]) -> dict[str, FileRecord]:
        """The ``records`` whose source's stored chunks are exactly the recorded version: as many
        as recorded, each with its ``doc_hash`` (one query for them all)."""
        if not records:
            return {}
        expected = sum(r.chunks for r in records.values())
        where = f"source in [{', '.join(quote(s) for s in records)}]"
        stored = self.index.stored.rows(where, ["source", "doc_hash"], limit=expected + 1)
        if len(stored) > expected and len(records) > 1:
            # More rows than recorded: some file has extra (an old version left). The rows
            # seen are cut at the limit, so which files are whole is read one file at a time.
            return {s: r for s, r in records.items() if self._complete({s: r})}
        counts: dict[str, int] = dict.fromkeys(records, 0)
        damaged: set[str] = set()
        for row in stored:
            source = row.get("source")
            if source not in records:
                continue
            counts[source] += 1
            if row.get("doc_hash") != records[source].doc_hash:
                damaged.add(source)  # relabelled, or an old version left beside the new one
        # Deleted or part-stored chunks, or any row of another version: convert again.
        return {s: r for s, r in records.items() if s not in damaged and counts[s] == r.chunks}

    def put(self, records: list[FileRecord]) -> None:
        """Store (replace) these files' records; a failure is logged (a record is only a hint)."""
        if not records:
            return
        try:
            with store_lock(self.index.uri):  # one store write at a time (``store.writing``)
                if not self._ready():
                    self._create()
                self.table.upsert([r.row() for r in records])
        except Exception as exc:  # noqa: BLE001 - the chunks are stored; the next ingest converts again
            log.warning("collection %r: could not record %d file(s): %s", self.name, len(records), exc)

    def forget(self, sources: list[str]) -> None:
        """Drop the records of these sources."""
        if sources and self._ready():
            self.table.delete([_key(s) for s in sources])

    def _create(self) -> None:
        index = {"index_type": "AUTOINDEX", "metric_type": "L2"}
        self.table.create([Field(_VECTOR, "vector", 2)], key_chars=64, vector_index=index)
