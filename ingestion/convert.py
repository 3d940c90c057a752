"""Find input files and convert them to ``DoclingDocument``s.

This first version reads the text formats (Markdown, plain text, HTML,
AsciiDoc, CSV); PDFs, Office files and images arrive with the multimodal
pipeline. Conversion errors are reported per file, never raised for the batch.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path

from docling.datamodel.base_models import InputFormat

# Suffix -> Docling input format. Plain text is valid Markdown.
SUPPORTED: dict[str, InputFormat] = {
    ".md": InputFormat.MD,
    ".markdown": InputFormat.MD,
    ".txt": InputFormat.MD,  # read by _text_document, not by the Markdown parser
    ".html": InputFormat.HTML,
    ".htm": InputFormat.HTML,
    ".xhtml": InputFormat.HTML,
    ".adoc": InputFormat.ASCIIDOC,
    ".asciidoc": InputFormat.ASCIIDOC,
    ".csv": InputFormat.CSV,
}


class UnsupportedFormatError(ValueError):
    """The file's type is not one this version ingests."""


def discover(paths: Iterable[str | Path], exclude: Iterable[str] = ()) -> Iterator[Path]:
    """Yield the files under ``paths`` (folders recurse; hidden files are skipped).

    A path that does not exist raises ``FileNotFoundError`` naming it, before
    anything is ingested.
    """
    patterns = list(exclude)
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise FileNotFoundError(f"no such file or folder: {path}")
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for f in files:
            rel = f.relative_to(path) if path.is_dir() else Path(f.name)
            if any(part.startswith(".") for part in rel.parts):
                continue
            if any(fnmatch.fnmatch(str(rel), pat) or fnmatch.fnmatch(f.name, pat) for pat in patterns):
                continue
            yield f


def check_supported(path: Path) -> InputFormat:
    """The Docling format for ``path``, or ``UnsupportedFormatError`` naming it."""
    fmt = SUPPORTED.get(path.suffix.lower())
    if fmt is None:
        raise UnsupportedFormatError(
            f"{path}: unsupported file type {path.suffix or '(no suffix)'!r}; "
            f"this version ingests {', '.join(sorted(SUPPORTED))}"
        )
    return fmt


@lru_cache(maxsize=1)
def converter():
    """One Docling converter per process (it caches its pipelines)."""
    from docling.document_converter import DocumentConverter

    return DocumentConverter(allowed_formats=sorted(set(SUPPORTED.values()), key=str))


def convert(path: Path):
    """Convert one file to a ``DoclingDocument``.

    Raises:
        UnsupportedFormatError: the suffix is not supported.
        ValueError: Docling could not read the file (message names the file).
    """
    check_supported(path)
    from io import BytesIO

    from docling.datamodel.base_models import ConversionStatus
    from docling.document_converter import DocumentStream

    data = path.read_bytes()
    if not data.strip():
        raise ValueError(f"{path}: file is empty")
    if path.suffix.lower() == ".txt":
        return _text_document(path, data)
    result = converter().convert(DocumentStream(name=path.name, stream=BytesIO(data)), raises_on_error=False)
    if result.status not in (ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS):
        errors = "; ".join(e.error_message for e in result.errors) or str(result.status)
        raise ValueError(f"{path}: Docling could not convert it ({errors})")
    return result.document


def _text_document(path: Path, data: bytes):
    """A plain-text file as a DoclingDocument, one text item per paragraph.

    Docling has no plain-text reader, and its Markdown parser would rewrite
    text that merely looks like Markdown (``#`` lines, ``*stars*``, tags).
    """
    import hashlib
    import re

    from docling_core.types.doc import DocItemLabel, DoclingDocument
    from docling_core.types.doc.document import DocumentOrigin

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    digest = int.from_bytes(hashlib.sha256(data).digest()[:8], "big")
    doc = DoclingDocument(
        name=path.stem,
        origin=DocumentOrigin(mimetype="text/plain", binary_hash=digest, filename=path.name),
    )
    for paragraph in re.split(r"\n\s*\n", text):
        if paragraph.strip():
            doc.add_text(label=DocItemLabel.TEXT, text=" ".join(paragraph.split()))
    return doc
