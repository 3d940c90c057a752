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

from rag_graphs.store.fields import PRIMARY_FIELD
from rag_graphs.store.filters import ids_filter, quote

log = logging.getLogger(__name__)

SUFFIX = "_files"
MAX_CHECKED = 16_384 - 1
"""Chunks of one file the check reads back at most (Milvus's query window); bigger files convert."""
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


class FileRecords:
    """The per-file records of one chunk collection (``index``: a ``ChunkIndex``), for files
    ingested under the chunk ``settings`` (``IngestOptions.chunk_settings``)."""

    def __init__(self, index: Any, settings: str = "") -> None:
        self.index = index
        self.settings = settings
        self.name = files_collection(index.collection)
        self._loaded = False

    def _ready(self) -> bool:
        """True when the records collection exists, loaded (a new process finds it released)."""
        client = self.index.client
        if not client.has_collection(self.name):
            return False
        if not self._loaded:
            client.load_collection(self.name)
            self._loaded = True
        return True

    def unchanged(self, source: str, content_hash: str, size: int) -> FileRecord | None:
        """The record of ``source`` when these bytes under these settings are what the collection
        holds, complete and alone; None when the file must be converted."""
        client = self.index.client
        if not self._ready():
            return None
        rows = client.query(self.name, filter=ids_filter([_key(source)]), output_fields=["*"])
        if not rows:
            return None
        try:
            record = FileRecord.from_row(rows[0])
        except (KeyError, TypeError, ValueError, json.JSONDecodeError):
            return None  # a damaged record is no record
        if (record.content_hash, record.size, record.settings) != (content_hash, size, self.settings):
            return None
        if not 0 < record.chunks <= MAX_CHECKED:
            return None
        stored = client.query(
            self.index.collection,
            filter=f"source == {quote(source)}",
            output_fields=["doc_hash"],
            limit=record.chunks + 1,
        )
        if len(stored) != record.chunks or any(r.get("doc_hash") != record.doc_hash for r in stored):
            return None  # deleted, part-stored, relabelled or an old version left: convert again
        return record

    def put(self, records: list[FileRecord]) -> None:
        """Store (replace) these files' records; a failure is logged (a record is only a hint)."""
        if not records:
            return
        try:
            if not self._ready():
                self._create()
            self.index.client.upsert(self.name, data=[r.row() for r in records])
        except Exception as exc:  # noqa: BLE001 - the chunks are stored; the next ingest converts again
            log.warning("collection %r: could not record %d file(s): %s", self.name, len(records), exc)

    def forget(self, sources: list[str]) -> None:
        """Drop the records of these sources."""
        if sources and self._ready():
            self.index.client.delete(self.name, ids=[_key(s) for s in sources])

    def _create(self) -> None:
        self.index.client.create_collection(
            self.name,
            dimension=2,
            primary_field_name=PRIMARY_FIELD,
            id_type="string",
            max_length=64,
            vector_field_name=_VECTOR,
            metric_type="L2",
            auto_id=False,
            enable_dynamic_field=True,
            consistency_level="Strong",
        )
        self._loaded = True  # quick setup indexes and loads it
