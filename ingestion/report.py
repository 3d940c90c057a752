"""What an ingest reports: one ``FileResult`` per input file, summed up in an ``IngestReport``.

A bad file never stops a batch, so the report is where failures go: each
carries the file's name in its error, and ``summary`` prints them under the
counts (files, chunks per kind, new versus already stored), followed by the
paths discovery passed over (links out of the folder, loops, duplicates,
FIFOs) and the documents that gave no chunk, each named.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_graphs.ingestion.convert.discover import Skipped
from rag_graphs.support.terminal import visible


@dataclass
class FileResult:
    """What happened to one input file."""

    path: str
    chunks: int = 0
    added: int = 0
    removed_stale: int = 0
    kinds: dict[str, int] = field(default_factory=dict)  # chunks per kind (text/table/picture)
    merged: int = 0  # identical chunks of the file (same id) counted and stored once
    error: str | None = None
    unchanged: bool = False  # skipped before conversion: its bytes and settings are what is stored


@dataclass
class IngestReport:
    """Summary of one ``ingest`` call."""

    files: list[FileResult] = field(default_factory=list)
    seconds: float = 0.0
    total_chunks_in_store: int = 0
    skipped: list[Skipped] = field(default_factory=list)  # paths discovery did not take, and why
    graph: str = ""  # one line: what became of the collection's entity graph (graph search)

    @property
    def ok(self) -> list[FileResult]:
        return [f for f in self.files if f.error is None]

    @property
    def failed(self) -> list[FileResult]:
        return [f for f in self.files if f.error is not None]

    @property
    def empty(self) -> list[FileResult]:
        """Files converted without error that gave no chunk (a lone heading): nothing to find."""
        return [f for f in self.ok if f.chunks == 0]

    @property
    def unchanged(self) -> list[FileResult]:
        """Files skipped before conversion: stored already, from the same bytes and settings."""
        return [f for f in self.ok if f.unchanged]

    @property
    def chunks(self) -> int:
        return sum(f.chunks for f in self.files)

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def kinds(self) -> dict[str, int]:
        """Chunks per kind over all files."""
        out: dict[str, int] = {}
        for f in self.files:
            for kind, n in f.kinds.items():
                out[kind] = out.get(kind, 0) + n
        return out

    def summary(self) -> str:
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.kinds.items())) or "none"
        stored = len(self.ok) - len(self.empty)
        lines = [
            f"{stored} file(s) ingested, {len(self.failed)} failed, {len(self.empty)} without text, "
            f"{len(self.skipped)} skipped, {len(self.unchanged)} unchanged (not converted); "
            f"{self.chunks} chunks "
            f"({kinds}; {self.added} new, {self.chunks - self.added} already stored); "
            f"{self.total_chunks_in_store} chunks in the store; {self.seconds:.1f}s"
        ]
        lines += [self.graph] if self.graph else []
        # File names are data: a newline in one must not forge a line, an escape must not run.
        lines += [f"  FAILED {visible(f.error)}" for f in self.failed]
        lines += [f"  NO CHUNKS {visible(f.path)}: converted, but no text to store" for f in self.empty]
        lines += [
            f"  MERGED {visible(f.path)}: {f.merged} identical chunk(s) stored once"
            for f in self.ok
            if f.merged
        ]
        lines += [f"  SKIPPED {visible(s)}" for s in self.skipped]
        return "\n".join(lines)
