"""Docling ingestion into a Milvus collection.

Owns the store and the embedding model that fills it. Depends on nothing in
``rag_graphs`` (see DESIGN.md's dependency direction).
"""

from ingestion.embeddings import EMBEDDED, load_embeddings
from ingestion.pipeline import FileResult, IngestOptions, IngestReport, ingest
from ingestion.store import ChunkIndex, StoreLockedError, access_filter, all_of, ids_filter, open_index, quote

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
