"""Docling ingestion into a Milvus collection.

Conversion, chunking, captioning, the ingest pipeline and the RAPTOR build. Installed as
``rag_graphs.ingestion`` (a real folder, mapped by setuptools' ``package-dir``); it writes through
``rag_graphs.store`` and ``rag_graphs.entity_graph`` (see docs/architecture.md's layers).

The names below are loaded on first use (PEP 562): importing the package must not pull Docling,
transformers and torch in through ``rag_graphs.ingestion.pipeline``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag_graphs.support.lazy import lazy_exports

if __name__ == "ingestion":  # its folder name, importable from a source checkout's root
    raise ImportError(
        "this package installs as rag_graphs.ingestion: write `from rag_graphs.ingestion import ...` "
        "(one top-level import package, so no name of another distribution is taken)"
    )


if TYPE_CHECKING:
    from rag_graphs.ingestion.options import IngestOptions
    from rag_graphs.ingestion.pipeline import ingest
    from rag_graphs.ingestion.report import FileResult, IngestReport
    from rag_graphs.ingestion.sources import Text

_HOMES = {
    "FileResult": "rag_graphs.ingestion.report",
    "IngestOptions": "rag_graphs.ingestion.options",
    "IngestReport": "rag_graphs.ingestion.report",
    "Text": "rag_graphs.ingestion.sources",
    "ingest": "rag_graphs.ingestion.pipeline",
}
"""Exported name -> the module that defines it."""

__all__ = [
    "FileResult",
    "IngestOptions",
    "IngestReport",
    "Text",
    "ingest",
]


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, globals())
