"""Convert one input file to a ``DoclingDocument``: the entry point, wiring the steps below.

Formats: PDF, DOCX, PPTX, XLSX, HTML, Markdown, plain text, AsciiDoc, CSV and
images (PNG, JPEG, TIFF), told by content (``rag_graphs.ingestion.convert.formats``).
Conversion errors are reported per file, never raised for the batch.

Each step is its own module:
  ``discover``   which files an ingest takes (folders, globs, patterns, symlinks)
  ``formats``    the supported formats and format sniffing from the bytes
  ``guards``     refusals before Docling runs: size, unreadable, empty, zip bombs, deep HTML
  ``documents``  hand-built documents for images and plain text
  ``converter``  ``ConvertOptions`` and Docling in this process
  ``workers``    Docling in a worker process with a per-file timeout
  ``serve``      conversion by a Docling Serve instance

Plain ``.txt`` must be UTF-8 (refused otherwise: its bytes could be any
encoding); Markdown, CSV and AsciiDoc that are not UTF-8 are decoded as cp1252
by Docling, with a warning. The names above stay importable from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from docling.datamodel.base_models import InputFormat

from rag_graphs.ingestion.convert.converter import (
    TIMEOUT_SECONDS,
    ConvertOptions,
    convert_here,
    converter,
    layout_models_present,
)
from rag_graphs.ingestion.convert.discover import discover
from rag_graphs.ingestion.convert.documents import text_document
from rag_graphs.ingestion.convert.formats import (
    OFFICE,
    SUPPORTED,
    UnsupportedFormatError,
    check_supported,
    detect_format,
)
from rag_graphs.ingestion.convert.guards import (
    MAX_FILE_BYTES,
    MAX_HTML_DEPTH,
    MAX_UNZIPPED_BYTES,
    MAX_ZIP_RATIO,
    check_zip,
    read_checked,
    zip_limit,
)
from rag_graphs.ingestion.convert.serve import convert_remote
from rag_graphs.ingestion.convert.workers import in_worker

if TYPE_CHECKING:
    from docling_core.types.doc import DoclingDocument

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_HTML_DEPTH",
    "MAX_UNZIPPED_BYTES",
    "MAX_ZIP_RATIO",
    "SUPPORTED",
    "TIMEOUT_SECONDS",
    "ConvertOptions",
    "UnsupportedFormatError",
    "check_supported",
    "convert",
    "convert_remote",
    "converter",
    "detect_format",
    "discover",
    "layout_models_present",
]


def convert(path: Path, options: ConvertOptions = ConvertOptions()) -> DoclingDocument:
    """Convert one file to a ``DoclingDocument``.

    Docling runs in a worker process when ``options.timeout`` is set (see
    ``rag_graphs.ingestion.convert.workers``),
    in this process when it is None, or on a Docling Serve instance when
    ``options.docling_serve`` names one.

    Raises:
        UnsupportedFormatError: the content is no supported format (the message says why).
        ValueError: the file is empty, too large, unreadable, a zip bomb, nested too deep,
            took longer than ``options.timeout``, or Docling could not read it (corrupt,
            truncated, password-protected); the message names the file.
    """
    data = read_checked(path, options.max_file_bytes)
    fmt = detect_format(path, data)
    if fmt in OFFICE:
        check_zip(path, data, zip_limit(options.max_file_bytes))
    if path.suffix.lower() == ".txt" and fmt is InputFormat.MD:
        return text_document(path, data)
    if options.docling_serve:
        return convert_remote(path, data, options.docling_serve)
    if options.timeout is None:
        return convert_here(path, data, fmt, options)
    return in_worker(path, data, fmt, options)
