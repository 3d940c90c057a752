"""Docling ingestion into a Milvus collection.

Owns the store and the embedding model that fills it. Depends on nothing in
``rag_graphs`` (see DESIGN.md's dependency direction).

The names below are loaded on first use (PEP 562): ``from ingestion.store.filters import quote``
must not pull Docling, transformers and torch in through ``ingestion.pipeline``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ingestion.pipeline import FileResult, IngestOptions, IngestReport, ingest
    from ingestion.store.embeddings import EMBEDDED, load_embeddings
    from ingestion.store.filters import access_filter, all_of, ids_filter, quote
    from ingestion.store.index import ChunkIndex, open_index
    from ingestion.store.lite import StoreLockedError

_HOMES = {
    "EMBEDDED": "ingestion.store.embeddings",
    "load_embeddings": "ingestion.store.embeddings",
    "FileResult": "ingestion.pipeline",
    "IngestOptions": "ingestion.pipeline",
    "IngestReport": "ingestion.pipeline",
    "ingest": "ingestion.pipeline",
    "ChunkIndex": "ingestion.store.index",
    "StoreLockedError": "ingestion.store.lite",
    "access_filter": "ingestion.store.filters",
    "all_of": "ingestion.store.filters",
    "ids_filter": "ingestion.store.filters",
    "open_index": "ingestion.store.index",
    "quote": "ingestion.store.filters",
}
"""Exported name -> the module that defines it."""

__all__ = [
    "EMBEDDED",
    "ChunkIndex",
    "FileResult",
    "IngestOptions",
    "IngestReport",
    "StoreLockedError",
    "access_filter",
    "all_of",
    "ids_filter",
    "ingest",
    "load_embeddings",
    "open_index",
    "quote",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'ingestion' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
