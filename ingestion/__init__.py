"""Docling ingestion into a Milvus collection.

Owns the store and the embedding model that fills it. Installed as ``rag_graphs.ingestion``;
it depends on ``rag_graphs.prompts`` only (see DESIGN.md's dependency direction).

The names below are loaded on first use (PEP 562): ``from rag_graphs.ingestion.store.filters import quote``
must not pull Docling, transformers and torch in through ``rag_graphs.ingestion.pipeline``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if __name__ == "ingestion":  # its folder name, importable from a source checkout's root
    raise ImportError(
        "this package installs as rag_graphs.ingestion: write `from rag_graphs.ingestion import ...` "
        "(one top-level import package, so no name of another distribution is taken)"
    )


if TYPE_CHECKING:
    from rag_graphs.ingestion.pipeline import FileResult, IngestOptions, IngestReport, ingest
    from rag_graphs.ingestion.store.embeddings import EMBEDDED, load_embeddings
    from rag_graphs.ingestion.store.filters import access_filter, all_of, ids_filter, quote
    from rag_graphs.ingestion.store.index import ChunkIndex, open_index
    from rag_graphs.ingestion.store.lite import StoreLockedError

_HOMES = {
    "EMBEDDED": "rag_graphs.ingestion.store.embeddings",
    "load_embeddings": "rag_graphs.ingestion.store.embeddings",
    "FileResult": "rag_graphs.ingestion.pipeline",
    "IngestOptions": "rag_graphs.ingestion.pipeline",
    "IngestReport": "rag_graphs.ingestion.pipeline",
    "ingest": "rag_graphs.ingestion.pipeline",
    "ChunkIndex": "rag_graphs.ingestion.store.index",
    "StoreLockedError": "rag_graphs.ingestion.store.lite",
    "access_filter": "rag_graphs.ingestion.store.filters",
    "all_of": "rag_graphs.ingestion.store.filters",
    "ids_filter": "rag_graphs.ingestion.store.filters",
    "open_index": "rag_graphs.ingestion.store.index",
    "quote": "rag_graphs.ingestion.store.filters",
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
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
