"""What an ingest reports: one ``FileResult`` per input file, summed up in an ``IngestReport``.

A bad file never stops a batch, so the report is where failures go: each
carries the file's name in its error, and ``summary`` prints them under the
counts (files, chunks per kind, new versus already stored).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FileResult:
    """What happened to one input file."""

    path: str
    chunks: int = 0
    added: int = 0
    removed_stale: int = 0
    kinds: dict[str, int] = field(default_factory=dict)  # chunks per kind (text/table/picture)
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
        lines = [
            f"{len(self.ok)} file(s) ingested, {len(self.failed)} failed; "
            f"{self.chunks} chunks ({kinds}; {self.added} new, {self.chunks - self.added} already stored); "
            f"{self.total_chunks_in_store} chunks in the store; {self.seconds:.1f}s"
        ]
        lines += [f"  FAILED {f.error}" for f in self.failed]
        return "\n".join(lines)
