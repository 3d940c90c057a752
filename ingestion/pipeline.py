"""``ingest(paths)``: convert, chunk, embed and store, with a progress bar and a report.

A bad file never stops the batch and never half-writes: each file's chunks
are built completely before any of them is stored, and a failure is recorded
in the report with the file's name.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from ingestion.chunking import chunk_document
from ingestion.convert import convert, discover
from ingestion.embeddings import EMBEDDED, chunk_tokenizer, load_embeddings
from ingestion.store import ChunkIndex, open_index


@dataclass
class FileResult:
    """What happened to one input file."""

    path: str
    chunks: int = 0
    added: int = 0
    removed_stale: int = 0
    error: str | None = None


@dataclass
class IngestReport:
    """Summary of one ``ingest`` call."""

    files: list[FileResult] = field(default_factory=list)
    seconds: float = 0.0
    total_chunks_in_store: int = 0

    @property
    def ok(self) -> list[FileResult]:
        return [f for f in self.files if f.error is None]

    @property
    def failed(self) -> list[FileResult]:
        return [f for f in self.files if f.error is not None]

    @property
    def chunks(self) -> int:
        return sum(f.chunks for f in self.files)

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    def summary(self) -> str:
        lines = [
            f"{len(self.ok)} file(s) ingested, {len(self.failed)} failed; "
            f"{self.chunks} chunks ({self.added} new, {self.chunks - self.added} already stored); "
            f"{self.total_chunks_in_store} chunks in the store; {self.seconds:.1f}s"
        ]
        lines += [f"  FAILED {f.error}" for f in self.failed]
        return "\n".join(lines)


def ingest(
    paths: Iterable[str | Path],
    *,
    uri: str,
    collection: str,
    embeddings: str = EMBEDDED,
    hybrid: bool = True,
    exclude: Iterable[str] = (),
    progress: bool = True,
    index: ChunkIndex | None = None,
    on_file: Callable[[FileResult], None] | None = None,
) -> IngestReport:
    """Ingest files and folders into the Milvus collection ``collection`` at ``uri``.

    Args:
        paths: files or folders (folders recurse; hidden files skipped).
        uri: Milvus Lite path or Milvus server URI.
        collection: collection name.
        embeddings: embedding model spec (see ``ingestion.embeddings``); its
            tokenizer also bounds chunk size.
        hybrid: create the collection with BM25 + dense (only when new).
        exclude: glob patterns of files to skip.
        progress: show a progress bar.
        index: an already-open index (overrides uri/collection/embeddings).
        on_file: called after each file, for live reporting.

    Raises:
        FileNotFoundError: a path does not exist (checked before any work).
        ingestion.store.StoreLockedError: another process holds the store.
    """
    start = time.perf_counter()
    files = list(discover(paths, exclude))
    if index is None:
        index = open_index(uri, collection, load_embeddings(embeddings), hybrid=hybrid)
    tokenizer = chunk_tokenizer(embeddings)
    report = IngestReport()
    for path in tqdm(files, desc="ingest", unit="file", disable=not progress):
        result = FileResult(path=str(path))
        try:
            doc = convert(path)
            source = str(path.resolve())
            chunks = chunk_document(doc, source=source, tokenizer=tokenizer)
            result.chunks = len(chunks)
            result.added = index.add(chunks)
            if chunks:
                result.removed_stale = index.delete_stale(source, chunks[0].metadata["doc_hash"])
        except Exception as exc:  # one bad file must not stop the batch
            result.error = str(exc) if str(path) in str(exc) else f"{path}: {exc}"
        report.files.append(result)
        if on_file:
            on_file(result)
    index.flush()
    report.total_chunks_in_store = index.count()
    report.seconds = time.perf_counter() - start
    return report
