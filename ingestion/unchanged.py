"""Which files of an ingest are stored already, checked a window of files at a time.

Each file is hashed and its record checked against the collection before it is converted
(``rag_graphs.store.files``). Checking one file per query made a re-ingest quadratic: Milvus
reads every row of the collection to answer a filter on ``source``, once per file (issue 41:
75 ms a file re-ingesting 2,500 unchanged files, 21 ms on the first ingest). Here the files are
cut into windows (up to WINDOW_FILES files or WINDOW_BYTES of them), and the first file of a
window asked about hashes the whole window and checks it with one ``unchanged_many`` call:
one read of the records and one of the chunks per window.
"""

from __future__ import annotations

import logging
import stat
import threading
from collections.abc import Callable
from pathlib import Path

from rag_graphs.store.files import BATCH_FILES, FileRecord, FileRecords, file_digest

log = logging.getLogger(__name__)

WINDOW_FILES = BATCH_FILES
WINDOW_BYTES = 256 << 20
"""A window closes at this many bytes of files too: a folder of large PDFs is hashed a few files
ahead of its conversions, not all of it before the first one starts."""

Digest = tuple[str, int]


class UnchangedFiles:
    """``check(path)``: the file's digest and, when it is stored already under the same settings,
    its record. Thread-safe: conversion threads ask in file order."""

    def __init__(
        self,
        files: list[Path],
        records: FileRecords,
        source: Callable[[Path], str],
        max_bytes: int,
        *,
        skip_check: bool = False,
    ) -> None:
        self._records, self._source, self._max_bytes = records, source, max_bytes
        self._skip_check = skip_check  # --force: hash every file, trust no record
        self._windows = _windows(files)
        self._window_of = {path: i for i, window in enumerate(self._windows) for path in window}
        self._checked: dict[Path, tuple[Digest | None, FileRecord | None]] = {}
        self._done: set[int] = set()
        self._lock = threading.Lock()

    def check(self, path: Path) -> tuple[Digest | None, FileRecord | None]:
        """``path``'s content hash and size (None when it is not a regular file, cannot be read or
        is over the size limit: conversion then refuses it, naming why) and its record when the
        collection holds exactly its bytes' chunks (None: convert it)."""
        window = self._window_of.get(path)
        if window is None:  # not one of the files given: checked on its own
            digest = _digest(path, self._max_bytes)
            return digest, None
        with self._lock:
            if window not in self._done:
                self._done.add(window)
                self._checked |= self._check_window(self._windows[window])
            return self._checked.pop(path, (None, None))

    def _check_window(self, files: list[Path]) -> dict[Path, tuple[Digest | None, FileRecord | None]]:
        digests = {path: _digest(path, self._max_bytes) for path in files}
        known = {self._source(p): d for p, d in digests.items() if d is not None}
        found: dict[str, FileRecord] = {}
        if known and not self._skip_check:
            try:
                found = self._records.unchanged_many(known)
            except Exception as exc:  # noqa: BLE001 - no record read: convert, as without one
                log.warning("could not read the ingest records of %d file(s): %s", len(known), exc)
        return {p: (d, found.get(self._source(p)) if d is not None else None) for p, d in digests.items()}


def _windows(files: list[Path]) -> list[list[Path]]:
    """``files`` in order, cut every WINDOW_FILES files or WINDOW_BYTES bytes."""
    windows: list[list[Path]] = []
    size = 0
    for path in files:
        if not windows or len(windows[-1]) >= WINDOW_FILES or size >= WINDOW_BYTES:
            windows.append([])
            size = 0
        windows[-1].append(path)
        try:
            size += path.stat().st_size
        except OSError:
            pass
    return windows


def _digest(path: Path, max_bytes: int) -> Digest | None:
    """The file's content hash and size; None when it is not a regular file (opening a FIFO
    blocks), cannot be read or is over the size limit."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        return file_digest(path)
    except OSError:
        return None
