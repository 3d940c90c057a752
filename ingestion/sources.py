"""What ``ingest`` takes: files and folders, ``http(s)://`` URLs, and texts held in memory (``Text``).

Docling converts files, so the two sources that are not files are made into files first, in one
private temporary folder per ingest: a URL is fetched under the SSRF guard
(``rag_graphs.ingestion.convert.urls``), a text is written under its own name (so its chunks'
title is that name). Everything the ingest reports then names the source, never that folder: the
chunks' ``source`` (the URL, ``text://<name>``), each file's ``path`` in the report and every error
line (``Sources.named``). Before, the indexing graph wrote its texts to files itself and patched
the temporary names out of the error strings afterwards, and a URL's error still showed the file
it was fetched into.

Importing this module loads nothing of Docling: the served request models use its names.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

TEXT_SCHEME = "text://"
"""How a text's chunks name their source: ``text://<name>`` (delete or relabel it by that)."""
TextFormat = Literal["markdown", "text", "html"]
SUFFIXES: dict[str, str] = {"markdown": ".md", "text": ".txt", "html": ".html"}
"""A text's format -> the suffix Docling reads it by."""


@dataclass(frozen=True)
class Text:
    """A text to ingest from memory, stored and cited as ``text://<name>``: the in-memory source,
    as Docling's ``DocumentStream`` is for bytes. Ingesting a text of the same name again replaces
    its chunks, as a file's do.

    Raises:
        ValueError: an empty name or text, or a format other than markdown, text or html.
    """

    name: str
    text: str
    format: TextFormat = "markdown"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.removeprefix(TEXT_SCHEME).strip():
            raise ValueError(f"Text.name: {self.name!r} is empty: a text needs a name to be stored under")
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValueError(f"Text.text of {self.key!r} is empty")
        if self.format not in get_args(TextFormat):
            raise ValueError(
                f"Text.format of {self.key!r}: {self.format!r} is not one of {get_args(TextFormat)}"
            )

    @property
    def key(self) -> str:
        """The source the store keys this text's chunks by: ``text://<name>``."""
        return TEXT_SCHEME + self.name.removeprefix(TEXT_SCHEME)


Source = str | Path | Text
"""One thing to ingest: a file or folder path, an ``http(s)://`` URL, or a ``Text``."""


@dataclass
class Sources:
    """The sources of one ingest, with its URLs fetched and its texts written into a private
    temporary folder.

    ``paths`` is the list to discover (URLs and texts replaced by their files), ``origin`` maps
    each such file to the source its chunks name, ``failed`` holds the URLs that could not be
    fetched, with why (reported per file, like a file that cannot be read).
    """

    paths: list[str | Path]
    origin: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    folder: tempfile.TemporaryDirectory | None = None

    @classmethod
    def gather(cls, sources: Iterable[Source], *, max_bytes: int, allow_private: bool = False) -> Sources:
        """Fetch every URL and write every text now (before any conversion); paths pass through.

        Raises:
            ValueError: two texts share a name.
        """
        from rag_graphs.ingestion.convert.urls import fetch_url, file_name, is_url  # loads Docling

        sources = list(sources)
        out = cls(paths=[s for s in sources if not isinstance(s, Text) and not is_url(s)])
        texts = [s for s in sources if isinstance(s, Text)]
        urls = [str(s) for s in sources if not isinstance(s, Text) and is_url(s)]
        if not texts and not urls:
            return out
        seen: set[str] = set()
        for text in texts:
            if text.key in seen:
                raise ValueError(f"{text.key}: given twice in one ingest")
            seen.add(text.key)
        out.folder = tempfile.TemporaryDirectory(prefix="rag-graphs-sources-")
        for i, text in enumerate(texts):
            stem = re.sub(r"[^A-Za-z0-9._-]+", "-", text.key.removeprefix(TEXT_SCHEME)).strip("-.")[:80]
            out._add(Path(out.folder.name, f"t{i}", (stem or "text") + SUFFIXES[text.format]), text.key)
            Path(out.paths[-1]).write_text(text.text, encoding="utf-8")
        for i, url in enumerate(urls):
            try:
                fetched = fetch_url(url, max_bytes=max_bytes, allow_private=allow_private)
            except ValueError as exc:
                out.failed[url] = str(exc)
                continue
            out._add(Path(out.folder.name, f"u{i}", file_name(fetched)), url)
            Path(out.paths[-1]).write_bytes(fetched.data)
        return out

    def _add(self, path: Path, name: str) -> None:
        path.parent.mkdir()
        self.origin[str(path)] = name
        self.paths.append(path)

    def source(self, path: Path) -> str:
        """What the chunks of ``path`` name as their source: its URL or ``text://`` name, or the
        file's real path."""
        return self.origin.get(str(path)) or str(path.resolve())

    def named(self, line: str | None) -> str | None:
        """``line`` (a file's path or error) with each fetched or written file replaced by the
        source it stands for."""
        for path, name in self.origin.items():
            line = line and line.replace(path, name)
        return line

    def close(self) -> None:
        """Remove the fetched and written files (also done when the object is garbage collected)."""
        if self.folder is not None:
            self.folder.cleanup()
