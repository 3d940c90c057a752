"""A Milvus Lite collection's column read from its own files (issue 47, round 7): the one place
outside pymilvus that knows Milvus Lite 3.x's storage.

Why: Milvus Lite keeps a collection as immutable Parquet files listed in its ``manifest.json``
(``_seq`` and the schema's fields per row version, deletes in delta files). Reading a vector column
through pymilvus takes its rows as Python float lists: 37 s and 3.8 GB for the 21k mixed store's
124,537 entity-name vectors; read from the files with pyarrow, a page at a time into one float32
matrix, ~2 s and +405 MB at peak (BENCHMARKS.md, "Graph search latency, round 7"). Graph search's
nearest-name search in process (``entity_graph.name_search``) reads its vectors here.

The files hold what was flushed: rows still in Milvus Lite's memory table are not in them, so a
caller checks what it gets against a read it trusts (``name_search`` compares each key's name with
the state's entity copy, and reads the rest by key through pymilvus). A manifest of another format
is None (the caller keeps to pymilvus); a file gone meanwhile (a compaction replaced it) raises.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag_graphs.store.fields import PRIMARY_FIELD

MANIFEST_FORMAT = 2
"""The ``manifest_format_version`` of Milvus Lite 3.2 (pinned in pyproject.toml) this reads."""
SEQ = "_seq"
"""A row version's write sequence number: the newest version of a key is the live one unless a
delete with a larger one follows."""
READ_BATCH = 16_384
"""Rows per page of a column read from a file (25 MB of float32 at 384 dimensions): the transient
peak of a read is the matrix plus about one page."""


@dataclass(frozen=True)
class LiteFiles:
    """A collection's data files and, per live key, where its newest version is: (file number,
    row in that file, the value of the field asked for with it)."""

    files: list[Path]
    live: dict[str, tuple[int, int, object]]


def newest_versions(uri: str, collection: str, field: str) -> LiteFiles | None:
    """Per key, the newest version in ``collection``'s data files that no delta file deletes, with
    its ``field``; None for a manifest of a format this does not know."""
    import pyarrow.parquet as pq

    folder = Path(uri).expanduser() / "collections" / collection
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    if manifest.get("manifest_format_version") != MANIFEST_FORMAT:
        return None
    files: list[Path] = []
    newest: dict[str, tuple[int, int, int, object]] = {}  # key -> (seq, file, row, value)
    deleted: dict[str, int] = {}
    for partition, listed in manifest.get("partitions", {}).items():
        root = folder / "partitions" / partition
        for rel in listed.get("delta_files", []):
            held = pq.read_table(root / rel, columns=[PRIMARY_FIELD, SEQ])
            for key, seq in zip(held.column(0).to_pylist(), held.column(1).to_pylist(), strict=True):
                deleted[key] = max(seq, deleted.get(key, -1))
        for rel in listed.get("data_files", []):
            files.append(root / rel)
            held = pq.read_table(root / rel, columns=[PRIMARY_FIELD, SEQ, field])
            columns = (held.column(c).to_pylist() for c in (PRIMARY_FIELD, SEQ, field))
            number = len(files) - 1
            for row, (key, seq, value) in enumerate(zip(*columns, strict=True)):
                if seq > newest.get(key, (-1,))[0]:
                    newest[key] = (seq, number, row, value)
    live = {
        key: (n, row, value) for key, (seq, n, row, value) in newest.items() if seq > deleted.get(key, -1)
    }
    return LiteFiles(files, live)


def read_vectors(
    path: Path, field: str, rows: np.ndarray, positions: np.ndarray, total: int, matrix: np.ndarray | None
) -> np.ndarray:
    """Copy the ``field`` vectors of ``rows`` (of the file at ``path``) into ``matrix`` at
    ``positions`` (a ``total`` x dimensions float32 matrix, made at the first call), a page at a
    time."""
    import pyarrow.parquet as pq

    order = np.argsort(rows)
    rows, positions = rows[order], positions[order]
    offset = 0
    # unbuffered, one thread: arrow's pool peaked at 98 MB on the 21k store's 100,000-row file
    # where the defaults (the whole column chunk pre-buffered, decoded in threads) took 250 MB
    held = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
    for page in held.iter_batches(batch_size=READ_BATCH, columns=[field], use_threads=False):
        column = page.column(0)
        dim = column.type.list_size
        if matrix is None:
            matrix = np.zeros((total, dim), dtype=np.float32)
        lo, hi = np.searchsorted(rows, [offset, offset + len(column)])
        if hi > lo:
            values = column.flatten().to_numpy(zero_copy_only=False).reshape(len(column), dim)
            matrix[positions[lo:hi]] = values[rows[lo:hi] - offset]
        offset += len(column)
    if matrix is None or offset <= (rows[-1] if len(rows) else -1):
        raise ValueError(f"{path}: fewer rows than its pk column")
    return matrix


def release_arrow_memory() -> None:
    """Hand the pages arrow's allocator kept after a read back to the system (mimalloc keeps
    them for reuse: ~300 MB of resident memory after 124,537 vectors otherwise)."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
