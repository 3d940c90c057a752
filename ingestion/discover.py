"""Which files an ingest takes: folders, globs, include/exclude patterns, and symlinks.

Discovery runs before anything is converted, so a path that matches nothing is
an error up front rather than an empty report. Symlinks are a trust boundary:
a folder of documents must not pull in files from outside it through a link,
and a broken link is kept so that conversion reports it by name instead of
losing the file silently.
"""

from __future__ import annotations

import fnmatch
import glob
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path

log = logging.getLogger(__name__)


def discover(
    paths: Iterable[str | Path], exclude: Iterable[str] = (), include: Iterable[str] = ()
) -> Iterator[Path]:
    """Yield the files under ``paths`` (folders recurse; hidden files are skipped).

    A path may be a glob (``reports/**/*.pdf``). ``include`` keeps only files
    matching one of its patterns, ``exclude`` drops files matching one of its
    patterns; patterns match the path relative to the folder given, or the
    file name. A path (or glob) that matches nothing raises ``FileNotFoundError``
    naming it, before anything is ingested.
    """
    keep, drop = list(include), list(exclude)
    for raw in paths:
        for file, rel in _roots(Path(raw).expanduser()):
            if any(part.startswith(".") for part in rel.parts):
                continue
            if keep and not _matches(rel, file.name, keep):
                continue
            if _matches(rel, file.name, drop):
                continue
            yield file


def _roots(path: Path) -> list[tuple[Path, Path]]:
    """The files ``path`` names (a file, a folder or a glob), each with its path relative to it."""
    if not path.exists() and glob.has_magic(str(path)):
        found = sorted(Path(p) for p in glob.glob(str(path), recursive=True) if Path(p).is_file())
        if not found:
            raise FileNotFoundError(f"no file matches {path}")
        return [(f, Path(f.name)) for f in found]
    if not path.exists():
        raise FileNotFoundError(f"no such file or folder: {path}")
    if path.is_file():
        return [(path, Path(path.name))]
    # broken symlinks (dangling, looping) are kept: convert reports them by name
    return [
        (f, f.relative_to(path))
        for f in sorted(path.rglob("*"))
        if (f.is_file() or _broken(f)) and _inside(f, path)
    ]


def _matches(rel: Path, name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(str(rel), pat) or fnmatch.fnmatch(name, pat) for pat in patterns)


def _inside(file: Path, folder: Path) -> bool:
    """False (and logged) for a symlink in ``folder`` that leads outside it: a folder of
    documents must not pull in ``/etc/passwd`` or another user's files through a link."""
    if not file.is_symlink() or _broken(file):
        return True
    if file.resolve().is_relative_to(folder.resolve()):
        return True
    log.warning("skipping %s: a symlink to %s, outside %s", file, file.resolve(), folder)
    return False


def _broken(path: Path) -> bool:
    """A symlink whose target is missing or loops (skipping it silently would hide a lost file)."""
    return path.is_symlink() and not path.exists()
