"""The Milvus collections, and the only code that talks to Milvus.

``collection`` (``Collection``: the one primitive every read and write of a collection goes
through, with Milvus's query limit and the filter hiding a file being replaced), ``index``
(``ChunkIndex``, ``open_index``), ``filters`` (filter expressions and their safety
check), ``lite`` (Milvus Lite paths: the one-process lock, damaged manifests, paths that are not
a store), ``failures`` (a Milvus server that cannot be used, in one line), ``reads``
(searches and lookups), ``embeddings`` (the embedding model that fills it), ``files`` (one record
per stored file), ``generations`` (a counter per collection that every write moves), ``tree``
(RAPTOR's summary rows), ``reports`` (GraphRAG community reports), ``derived`` (dropping both when
their chunks go) and ``sentences`` (small-to-big child rows, searched for their parents).

Below ``entity_graph``, ``ingestion`` and ``search``; imports only ``rag_graphs.support``,
``rag_graphs.config`` and ``rag_graphs.prompts``. The names below load on first use (PEP 562): a
settings check that needs ``filters`` must not load Milvus.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag_graphs.support.lazy import lazy_exports

if TYPE_CHECKING:
    from rag_graphs.store.embeddings import EMBEDDED, load_embeddings
    from rag_graphs.store.filters import access_filter, ids_filter, quote
    from rag_graphs.store.index import ChunkIndex, open_index
    from rag_graphs.store.lite import StoreLockedError

_HOMES = {
    "EMBEDDED": "rag_graphs.store.embeddings",
    "load_embeddings": "rag_graphs.store.embeddings",
    "ChunkIndex": "rag_graphs.store.index",
    "open_index": "rag_graphs.store.index",
    "StoreLockedError": "rag_graphs.store.lite",
    "access_filter": "rag_graphs.store.filters",
    "ids_filter": "rag_graphs.store.filters",
    "quote": "rag_graphs.store.filters",
}
"""Exported name -> the module that defines it."""

__all__ = [
    "EMBEDDED",
    "ChunkIndex",
    "StoreLockedError",
    "access_filter",
    "ids_filter",
    "load_embeddings",
    "open_index",
    "quote",
]


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, globals())
