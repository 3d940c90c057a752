"""Milvus Lite paths: one process per data folder, checked before Milvus Lite starts.

A Milvus Lite store is a folder that one process at a time may open; pymilvus reports a folder
held by another process, a file in its place or damaged manifests only as "Open local milvus
failed" (or not at all), so the path is checked and the lock probed here first, and the
errors name the path and the setting.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


class StoreLockedError(RuntimeError):
    """Another process holds the Milvus Lite data directory."""


class StoreDamagedError(ValueError):
    """A Milvus Lite data directory's own files are damaged (read as is, it would look emptier)."""


class NotAStoreError(ValueError):
    """A local store path that is not a Milvus Lite store: a folder of other files, or a path
    Milvus Lite does not take (it must end in ``.db``)."""


STORE_SUFFIX = ".db"
"""What a Milvus Lite path ends in: pymilvus takes any other local path for a malformed URI."""
STORE_MARKERS = ("LOCK", "collections", "databases")
"""What Milvus Lite (3.x) creates in a store folder when it first opens it."""


def check_manifests(uri: str) -> None:
    """Refuse a Milvus Lite store whose ``manifest.json`` (the list of a collection's data
    files) is not JSON: Milvus Lite would fall back to an older copy, or none, and the store
    would read as holding fewer chunks or none, without a word.

    Raises:
        StoreDamagedError: naming the manifest and the store.
    """
    root = Path(uri).expanduser()
    if not is_local(uri) or not root.is_dir():
        return
    for manifest in sorted(root.rglob("manifest.json")):
        try:
            json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise StoreDamagedError(
                f"the Milvus Lite store {uri!r} is damaged: {manifest} cannot be read ({exc}), so "
                "its chunks cannot be listed. Restore the store folder from a backup, or move it "
                "aside and ingest the documents again (--store, RAG_GRAPHS_STORE_URI)"
            ) from exc


def is_local(uri: str) -> bool:
    """True when ``uri`` is a Milvus Lite path rather than a server URI."""
    return "://" not in uri


def _lock_message(uri: str) -> str:
    return (
        f"the Milvus Lite store {uri!r} is open in another process "
        f"(lock file {os.path.join(uri, 'LOCK')}). Milvus Lite allows one process per path: "
        "stop the other process (a notebook kernel, `rag-graphs ask`, `langgraph dev`), use a "
        "different path (RAG_GRAPHS_STORE_URI), or run a Milvus server and set "
        "RAG_GRAPHS_STORE_URI=http://localhost:19530 for concurrent use."
    )


def check_store_path(uri: str) -> None:
    """Refuse, naming it, a local store path Milvus Lite cannot use, before anything runs.

    A Milvus Lite store is a folder. A regular file at the path, a file where a parent
    folder should be, or a folder this user cannot write would otherwise surface as
    pymilvus's bare "Open local milvus failed" in the middle of a run.

    A folder that already holds other files (the user's own) is refused before Milvus Lite
    writes its files into it, and before ``check_manifests`` reads a ``manifest.json`` of the
    user's as a damaged store; a path not ending in ``.db`` is refused before pymilvus reports
    it as an illegal URI in a 70-line traceback.

    Raises:
        NotAStoreError: the path is a folder of other files, or does not end in ``.db``.
        ValueError: the path is a file, lies under a file, or is not writable.
    """
    if not is_local(uri):
        return
    path = Path(uri).expanduser()
    hint = "choose another path (--store, RAG_GRAPHS_STORE_URI)"
    if path.exists() and not path.is_dir():
        raise ValueError(f"store path {uri!r} is a regular file, not a Milvus Lite store folder: {hint}")
    if path.is_dir() and _holds_other_files(path):
        raise NotAStoreError(
            f"store path {uri!r} is not a Milvus Lite store: it is a folder that holds other files "
            f"(none of Milvus Lite's {', '.join(STORE_MARKERS)}), left untouched. Give a new path "
            f"ending in {STORE_SUFFIX} (the default is .rag-graphs/milvus.db; --store, RAG_GRAPHS_STORE_URI)"
        )
    if path.suffix != STORE_SUFFIX:
        raise NotAStoreError(
            f"store path {uri!r} is not a Milvus Lite store path: Milvus Lite takes a path ending in "
            f"{STORE_SUFFIX} (such as {str(path.with_name(path.name + STORE_SUFFIX))!r}), and a Milvus "
            "server a URI such as http://localhost:19530 (--store, RAG_GRAPHS_STORE_URI)"
        )
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        raise ValueError(f"store path {uri!r} lies under {str(existing)!r}, a regular file: {hint}")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"store path {uri!r}: {str(existing)!r} is not writable by this user: {hint}")


def _holds_other_files(folder: Path) -> bool:
    """True when ``folder`` has entries (hidden ones aside: a ``.DS_Store``) but none of the
    ones Milvus Lite creates."""
    try:
        names = {entry.name for entry in os.scandir(folder) if not entry.name.startswith(".")}
    except OSError:
        return False  # unreadable: the writability check and Milvus Lite name it
    return bool(names) and not names & set(STORE_MARKERS)


def _served_here(uri: str) -> bool:
    """True when this process already serves the Milvus Lite store at ``uri`` (its own lock, then).

    Reads milvus-lite's per-path server table; False when that is not available, so the
    lock probe only runs (and can only refuse) when no server of this process holds the path.
    """
    try:
        from milvus_lite.server_manager import server_manager_instance  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - Milvus Lite is a dependency
        return True
    servers = getattr(server_manager_instance, "_servers", None)
    if not isinstance(servers, dict):  # pragma: no cover - another milvus-lite layout: do not probe
        return True
    return any(os.path.abspath(p) in servers for p in (uri, os.path.expanduser(uri)))


def _held_by_other_process(uri: str) -> bool:
    """True when another process holds Milvus Lite's advisory lock on ``uri``.

    pymilvus reports a locked data directory only as "Open local milvus
    failed", so after a failed open we probe the lock file ourselves.
    """
    lock = Path(uri).expanduser() / "LOCK"
    if not lock.exists():
        return False
    import fcntl

    with open(lock, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False
