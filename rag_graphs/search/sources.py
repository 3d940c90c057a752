"""Name indexed sources the way the store keys them, and remove them.

The store keys chunks by absolute path (or URL for web pages), while people
type relative paths and folders. ``source_key`` turns what they type into the
store's key (used by ``ask --source`` and ``RagContext.sources`` callers), and
``delete_sources`` removes a file, or every file under a folder, from an index,
for the CLI's ``ingest --delete`` and for notebooks alike. Only ingestion's
public ``ChunkIndex`` API is used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag_graphs.store import ChunkIndex


@dataclass(frozen=True)
class Removed:
    """What deleting one target removed: the matched sources and their chunk count."""

    target: str | Path
    sources: tuple[str, ...]
    chunks: int


def source_key(source: str | Path) -> str:
    """The store's key for ``source``: a URL as given, a path made absolute (``~`` expanded)."""
    text = str(source)
    return text if "://" in text else str(Path(text).expanduser().resolve())


def matching_sources(indexed: Iterable[str], target: str | Path) -> list[str]:
    """The indexed sources that are ``target`` or lie under it (a folder, or a URL prefix)."""
    key = source_key(target)
    folder = key.rstrip("/") + "/"
    return [s for s in indexed if s == key or s.startswith(folder)]


def delete_sources(index: ChunkIndex, targets: Iterable[str | Path]) -> list[Removed]:
    """Remove every chunk of each target (a file, or all files under a folder) and flush.

    Every target is matched before anything is deleted, so a mistyped one leaves
    the store untouched rather than half cleaned.

    Raises:
        ValueError: a target names no indexed source (the message lists them all).
    """
    indexed: Mapping[str, object] = index.sources()
    matches = [(target, matching_sources(indexed, target)) for target in targets]
    unknown = [str(target) for target, found in matches if not found]
    if unknown:
        raise ValueError(f"{', '.join(unknown)}: not an indexed source (see `rag-graphs sources`)")
    removed = [
        Removed(target, tuple(found), sum(index.delete_source(s) for s in found)) for target, found in matches
    ]
    index.flush()
    return removed
