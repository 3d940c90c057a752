"""Which files an ingest takes: folders, globs, include/exclude patterns, and symlinks.

Discovery runs before anything is converted, so a path that matches nothing is
an error up front rather than an empty report. Every way of naming files goes
through one path policy:

- A folder, or a glob, has a *root*: the folder itself, or the part of the glob
  before its first wildcard (``docs/**/*.md`` -> ``docs``). Nothing that
  resolves outside the root is read: a link to ``/etc/passwd`` or ``../other``
  is skipped and reported. ``follow_links=True`` opts in to following links
  anywhere (off by default).
- Links to folders are not descended (their files are read where they really
  are, under the root) unless ``follow_links``; even then a folder already
  walked is never walked again, so ``loop -> .`` cannot expand.
- A file reached twice (two links to one file, a path named twice) is read once.
- Only regular files are read: a FIFO or a device would block or never end.
- Files a user names one by one are taken as named, links included.
- A broken link (dangling, looping) is kept so that conversion reports it by
  name instead of losing the file silently.
- A store's own folder is never read: the one being written to, rag-graphs' default
  ``.rag-graphs`` folder (``avoid``) and any other Milvus Lite store met on the way are
  skipped with one note each (their LOCK, manifests and parquet files gave 10 FAILED lines).
- A file whose path is not UTF-8 text (bytes ``os.fsdecode`` keeps as lone surrogates) is
  refused, named with those bytes escaped and the reason: the store keeps sources as UTF-8
  text, and the file used to fail on a bare "surrogates not allowed".

The globs are matched here, against a walk of their root, never expanded by
``glob.glob``: two self-links would make that expand 2^depth paths before a
single file is read.
"""

from __future__ import annotations

import fnmatch
import glob
import logging
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rag_graphs.store.lite import STORE_MARKERS, STORE_SUFFIX

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Skipped:
    """A path discovery saw and did not take, with why (reported, never silent)."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass
class Found:
    """The files to ingest, in order, the paths passed over, and the files that cannot be
    ingested (``refused``: reported as failed, each with why)."""

    files: list[Path] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    refused: list[Skipped] = field(default_factory=list)


NOT_UTF8 = (
    "its path holds bytes that are not UTF-8 (shown as \\xNN), and the store keeps each file's "
    "path as UTF-8 text: rename the file or its folder to a UTF-8 name (convmv does it)"
)
STORE_FOLDER = "a Milvus Lite store's own folder (its data files are not documents): not read"


def discover(
    paths: Iterable[str | Path],
    exclude: Iterable[str] = (),
    include: Iterable[str] = (),
    *,
    follow_links: bool = False,
) -> Iterator[Path]:
    """Yield the files under ``paths`` (see ``find_files``; skipped paths are logged)."""
    found = find_files(paths, exclude=exclude, include=include, follow_links=follow_links)
    for skip in [*found.skipped, *found.refused]:
        log.warning("skipping %s", skip)
    yield from found.files


def find_files(
    paths: Iterable[str | Path],
    *,
    exclude: Iterable[str] = (),
    include: Iterable[str] = (),
    follow_links: bool = False,
    avoid: dict[Path, str] | None = None,
) -> Found:
    """The files under ``paths`` (folders recurse; hidden files are skipped) and what was skipped.

    A path may be a glob (``reports/**/*.pdf``). ``include`` keeps only files
    matching one of its patterns, ``exclude`` drops files matching one of its
    patterns; patterns match the path relative to the folder (or glob root)
    given, or the file name. A path (or glob) that matches nothing raises
    ``FileNotFoundError`` naming it, before anything is ingested. ``avoid`` maps
    folders (resolved) never to read to why (the store's own folder): each is one note.
    """
    keep, drop = list(include), list(exclude)
    found = Found()
    seen: dict[tuple[int, int] | str, Path] = {}
    own = {folder.resolve(): why for folder, why in (avoid or {}).items()}
    for raw in paths:
        for file, rel in _named(Path(raw).expanduser(), follow_links, found.skipped, own):
            if any(part.startswith(".") for part in rel.parts):
                continue
            if keep and not _matches(rel, file.name, keep):
                continue
            if _matches(rel, file.name, drop):
                continue
            key = _identity(file)
            if key in seen:
                found.skipped.append(Skipped(str(file), f"the same file as {seen[key]} (read once)"))
                continue
            seen[key] = file
            if not _utf8(os.path.realpath(file)) or not _utf8(str(file)):
                found.refused.append(Skipped(str(file), NOT_UTF8))
                continue
            found.files.append(file)
    return found


def _utf8(text: str) -> bool:
    """True when ``text`` holds no lone surrogate (a path's undecodable bytes)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _named(
    path: Path, follow: bool, skipped: list[Skipped], avoid: dict[Path, str]
) -> list[tuple[Path, Path]]:
    """The files ``path`` names (a file, a folder or a glob), each with its path relative to its root."""
    if not path.exists() and not path.is_symlink() and glob.has_magic(str(path)):
        root, pattern = split_glob(path)
        if not root.is_dir():
            raise FileNotFoundError(f"no file matches {path} (no folder {root})")
        if why := _store_inside(root, avoid):
            skipped.append(Skipped(str(root), why))
            return []
        walked = _walk(root, follow, skipped, avoid)
        found = [(f, rel) for f, rel in walked if _glob_match(pattern, rel.parts)]
        if not found:
            raise FileNotFoundError(f"no file matches {path}")
        return found
    if not path.exists() and not path.is_symlink():
        raise FileNotFoundError(f"no such file or folder: {path}")
    if why := _store_inside(path, avoid):
        skipped.append(Skipped(str(path), why))
        return []
    if path.is_dir():
        return _walk(path, follow, skipped, avoid)
    return [(path, Path(path.name))]  # named one by one: taken as named (convert reports a bad one)


def _store_inside(path: Path, avoid: dict[Path, str]) -> str | None:
    """Why ``path`` is not read when it is (or lies in) a folder of ``avoid`` or a Milvus Lite store."""
    real = Path(os.path.realpath(path))
    for folder in (real, *real.parents):
        if folder in avoid:
            return avoid[folder]
        if _is_store(folder):
            return STORE_FOLDER
    return None


def _is_store(folder: Path) -> bool:
    """A Milvus Lite store folder: named ``*.db``, with the files Milvus Lite makes in it."""
    return folder.suffix == STORE_SUFFIX and all((folder / name).exists() for name in STORE_MARKERS)


def split_glob(path: Path) -> tuple[Path, tuple[str, ...]]:
    """The glob's root (the folders before its first wildcard) and the pattern parts below it."""
    parts = path.parts
    first = next(i for i, part in enumerate(parts) if glob.has_magic(part))
    return Path(*parts[:first]) if first else Path("."), parts[first:]


def _walk(
    root: Path, follow: bool, skipped: list[Skipped], avoid: dict[Path, str]
) -> list[tuple[Path, Path]]:
    """Every file under ``root`` the path policy admits, sorted, with its path relative to ``root``."""
    top = root.resolve()
    walked = {top}
    out: list[tuple[Path, Path]] = []
    pending = [(root, Path())]
    while pending:
        folder, rel = pending.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            skipped.append(Skipped(str(folder), f"cannot be listed ({exc.strerror or exc})"))
            continue
        for entry in entries:
            path, inner = Path(entry.path), rel / entry.name
            if entry.name.startswith("."):
                continue
            reason = _refused(path, top, follow)
            if reason:
                skipped.append(Skipped(str(path), reason))
            elif path.is_dir():
                real = path.resolve()
                if own := avoid.get(real) or (STORE_FOLDER if _is_store(real) else None):
                    skipped.append(Skipped(str(path), own))  # one note, none of its files
                    continue
                if real in walked or top.is_relative_to(real):
                    skipped.append(Skipped(str(path), f"a link back to {real}, already walked (a loop)"))
                    continue
                walked.add(real)
                pending.append((path, inner))
            elif path.is_file() or _broken(path):  # broken links are kept: convert names them
                out.append((path, inner))
            else:
                skipped.append(Skipped(str(path), "not a regular file (a FIFO, socket or device)"))
    return sorted(out)


def _refused(path: Path, top: Path, follow: bool) -> str | None:
    """Why the link ``path`` under ``top`` is not taken (None: it is, or it is not a link)."""
    if not path.is_symlink() or _broken(path):
        return None
    target = path.resolve()
    if follow:
        return None
    if not target.is_relative_to(top):
        return f"a symlink to {target}, outside {top} (not followed; follow_links to allow)"
    if target.is_dir():
        return f"a symlink to the folder {target} (not followed: its files are read where they are)"
    return None


def _glob_match(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    """``parts`` (a path under the glob root) matches ``pattern`` (``**`` spans any folders)."""
    if not pattern:
        return not parts
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_glob_match(rest, parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], head) and _glob_match(rest, parts[1:])


def _identity(file: Path) -> tuple[int, int] | str:
    """What makes two paths one file: device and inode (links, hard links), else the resolved path."""
    try:
        info = file.stat()
    except OSError:  # a broken link (dangling or looping: resolve() would raise on the loop)
        return os.path.abspath(file)
    return (info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) else os.path.realpath(file)


def _matches(rel: Path, name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(str(rel), pat) or fnmatch.fnmatch(name, pat) for pat in patterns)


def _broken(path: Path) -> bool:
    """A symlink whose target is missing or loops (skipping it silently would hide a lost file)."""
    return path.is_symlink() and not path.exists()
