"""Files refused before Docling sees them: what would hurt the converter is caught up front.

A file that cannot be read (a dangling or looping symlink, a permission), is
empty or too large, an Office zip whose parts unpack to absurd sizes (a zip
bomb), or HTML nested deeper than Docling's recursive reader can walk costs
one ``ValueError`` naming the file, never the batch or the machine.
"""

from __future__ import annotations

import stat
import zipfile
from io import BytesIO
from pathlib import Path
from typing import cast

MAX_FILE_BYTES = 100 * 1024 * 1024
MAX_UNZIPPED_BYTES = 1024**3  # an Office file's parts may unpack to at most this (and 20x the file limit)
MAX_ZIP_RATIO = 200  # ... and no part over 50 MB may unpack to more than 200x its packed size
MAX_HTML_DEPTH = 256  # Docling's HTML reader recurses per level (RecursionError at ~450, quadratic before)


def read_checked(path: Path, max_bytes: int) -> bytes:
    """The bytes of ``path``, refused when it is over ``max_bytes``, unreadable or empty."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):  # reading a FIFO blocks, a device never ends
            raise ValueError(f"{path}: not a regular file (a FIFO, socket or device), not read")
        size = info.st_size
        if size > max_bytes:
            raise ValueError(
                f"{path}: {size / 1e6:.1f} MB is over the {max_bytes / 1e6:.0f} MB limit "
                "(raise it with --max-file-mb)"
            )
        data = path.read_bytes()
    except OSError as exc:  # a dangling or looping symlink, a permission, a file gone meanwhile
        raise ValueError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    if not data.strip():
        raise ValueError(f"{path}: file is empty")
    return data


def zip_limit(max_file_bytes: int) -> int:
    """How much an Office file's parts may unpack to, given the file size limit."""
    return min(MAX_UNZIPPED_BYTES, 20 * max_file_bytes)


def check_zip(path: Path, data: bytes, limit: int) -> None:
    """Refuse an Office zip whose parts would unpack to absurd sizes (a zip bomb).

    The sizes a zip declares can be trusted for reading: ``zipfile`` stops at
    the declared size (and checks the CRC), so what Docling would unpack is bounded by them.
    """
    infos = zipfile.ZipFile(BytesIO(data)).infolist()
    for info in infos:
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > 50e6 and ratio > MAX_ZIP_RATIO:
            raise ValueError(
                f"{path}: refused as a zip bomb: part {info.filename} unpacks to {_size(info.file_size)} "
                f"from {_size(info.compress_size)} ({ratio:.0f}:1)"
            )
    total = sum(info.file_size for info in infos)
    if total > limit:
        largest = max(infos, key=lambda info: info.file_size)
        raise ValueError(
            f"{path}: refused as a zip bomb: its parts unpack to {_size(total)}, over the {_size(limit)} "
            f"limit (largest: {largest.filename}, {_size(largest.file_size)})"
        )


def check_html_depth(path: Path, data: bytes) -> None:
    """Refuse HTML nested deeper than ``MAX_HTML_DEPTH`` (unclosed tags nest too)."""
    if (depth := html_depth(data)) > MAX_HTML_DEPTH:
        raise ValueError(
            f"{path}: HTML nested {depth} levels deep (the limit is {MAX_HTML_DEPTH}; unclosed tags nest too)"
        )


def html_depth(data: bytes) -> int:
    """How deep the tree Docling's HTML reader walks (same parser) is nested, without recursion."""
    from bs4 import BeautifulSoup, Tag

    deepest, stack = 0, [(cast(Tag, BeautifulSoup(data, "html.parser")), 0)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in node.children if isinstance(child, Tag))
    return deepest


def _size(n: float) -> str:
    """``n`` bytes, readable in a message."""
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"
