"""Which formats ingest reads, and how a file's bytes tell which one it is.

The format comes from the content (magic numbers, the parts inside an Office
zip), not from the name alone: a PDF called ``report.docx`` is read as a PDF,
and binary data called ``notes.md`` is an error naming the file. Only the text
formats, which bytes cannot tell apart, go by their suffix.
"""

from __future__ import annotations

import zipfile
from io import BytesIO
from pathlib import Path

from docling.datamodel.base_models import InputFormat

# Suffix -> Docling input format, for the text formats a file's bytes cannot tell apart.
SUPPORTED: dict[str, InputFormat] = {
    ".md": InputFormat.MD,
    ".markdown": InputFormat.MD,
    ".txt": InputFormat.MD,  # read by documents.text_document, not by the Markdown parser
    ".html": InputFormat.HTML,
    ".htm": InputFormat.HTML,
    ".xhtml": InputFormat.HTML,
    ".adoc": InputFormat.ASCIIDOC,
    ".asciidoc": InputFormat.ASCIIDOC,
    ".csv": InputFormat.CSV,
    ".pdf": InputFormat.PDF,
    ".docx": InputFormat.DOCX,
    ".pptx": InputFormat.PPTX,
    ".xlsx": InputFormat.XLSX,
    ".png": InputFormat.IMAGE,
    ".jpg": InputFormat.IMAGE,
    ".jpeg": InputFormat.IMAGE,
    ".tif": InputFormat.IMAGE,
    ".tiff": InputFormat.IMAGE,
}
OFFICE = (InputFormat.DOCX, InputFormat.PPTX, InputFormat.XLSX)
"""The Office Open XML formats: zips, checked for zip bombs before conversion."""

_BINARY_MAGIC: list[tuple[bytes, InputFormat]] = [
    (b"%PDF-", InputFormat.PDF),
    (b"\x89PNG\r\n\x1a\n", InputFormat.IMAGE),
    (b"\xff\xd8\xff", InputFormat.IMAGE),
    (b"II*\x00", InputFormat.IMAGE),
    (b"MM\x00*", InputFormat.IMAGE),
]
# Office Open XML files are zips; the folder of their main part names the format.
_ZIP_PARTS = {"word/": InputFormat.DOCX, "ppt/": InputFormat.PPTX, "xl/": InputFormat.XLSX}
# The first suffix SUPPORTED lists for each format (reversed, so earlier entries win).
_SUFFIX = {fmt: suffix[1:] for suffix, fmt in reversed(SUPPORTED.items())}


class UnsupportedFormatError(ValueError):
    """The file's type is not one this version ingests."""


def check_supported(path: Path) -> InputFormat:
    """The Docling format for ``path`` by its suffix, or ``UnsupportedFormatError`` naming it."""
    fmt = SUPPORTED.get(path.suffix.lower())
    if fmt is None:
        raise UnsupportedFormatError(
            f"{path}: unsupported file type {path.suffix or '(no suffix)'!r}; "
            f"this version ingests {', '.join(sorted(SUPPORTED))}"
        )
    return fmt


def detect_format(path: Path, data: bytes) -> InputFormat:
    """The Docling format of ``data`` (the bytes of ``path``), by content first.

    Binary formats are recognised by their magic numbers whatever the file is
    called; text formats (which bytes cannot tell apart) by the suffix, after
    checking the bytes really are text.

    Raises:
        UnsupportedFormatError: neither the content nor the suffix is a supported format,
            or a text suffix holds binary data.
    """
    for magic, fmt in _BINARY_MAGIC:
        if data.startswith(magic):
            return fmt
    if data.startswith(b"PK\x03\x04"):
        try:
            names = zipfile.ZipFile(BytesIO(data)).namelist()
        except zipfile.BadZipFile as exc:
            raise UnsupportedFormatError(f"{path}: a damaged zip archive ({exc})") from exc
        for prefix, fmt in _ZIP_PARTS.items():
            if any(n.startswith(prefix) for n in names):
                return fmt
        raise UnsupportedFormatError(f"{path}: a zip archive that is not a DOCX, PPTX or XLSX file")
    fmt = check_supported(path)
    if fmt in (InputFormat.PDF, *OFFICE, InputFormat.IMAGE):
        raise UnsupportedFormatError(
            f"{path}: named {path.suffix} but its content is not a {fmt.value.upper()} file "
            "(truncated, corrupt or mislabelled)"
        )
    if b"\x00" in data[:8192]:
        raise UnsupportedFormatError(f"{path}: named {path.suffix} but holds binary data, not text")
    return fmt


def stream_name(path: Path, fmt: InputFormat) -> str:
    """The name to hand Docling ``path``'s bytes under: its own when the suffix says ``fmt``,
    else the stem with ``fmt``'s suffix, so Docling reads what was detected (a PDF named .docx)."""
    return path.name if SUPPORTED.get(path.suffix.lower()) is fmt else f"{path.stem}.{_SUFFIX[fmt]}"
