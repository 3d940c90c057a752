"""``ingest(paths)``: convert, chunk, embed and store, with a progress bar and a report.

A bad file never stops the batch and never half-writes: each file's chunks
are built completely before any of them is stored, and a failure is recorded
in the report with the file's name.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.documents import Document
from tqdm.auto import tqdm

from ingestion.captioning import Captioner, CaptionPrompt, load_captioner
from ingestion.chunking import chunk_document
from ingestion.convert import MAX_FILE_BYTES, TIMEOUT_SECONDS, ConvertOptions, convert, discover
from ingestion.embeddings import EMBEDDED, chunk_tokenizer, load_embeddings
from ingestion.store import TAGS_FIELD, TENANT_FIELD, ChunkIndex, open_index

T = TypeVar("T")
EMBED_GROUP = 256  # chunks embedded per call, across files
AHEAD_FILES = 16  # files converted and chunked ahead while a group is embedded


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


def ingest(
    paths: Iterable[str | Path],
    *,
    uri: str | None = None,
    collection: str | None = None,
    embeddings: str = EMBEDDED,
    hybrid: bool = True,
    exclude: Iterable[str] = (),
    include: Iterable[str] = (),
    progress: bool = True,
    index: ChunkIndex | None = None,
    on_file: Callable[[FileResult], None] | None = None,
    captioner: str | Captioner | None = None,
    caption_prompt: CaptionPrompt = "describe",
    allow_fetch: bool = False,
    max_file_bytes: int = MAX_FILE_BYTES,
    docling_serve: str | None = None,
    timeout: float | None = TIMEOUT_SECONDS,
    tenant: str | None = None,
    tags: Iterable[str] = (),
    context: Any = None,
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
        include: glob patterns of the only files to take (all when empty).
        progress: show a progress bar.
        index: an already-open index (overrides uri/collection/embeddings).
        on_file: called after each file, for live reporting.
        captioner: who describes pictures: a spec (``fallback``, ``tesseract``,
            ``api:<url>#<model>``, ``ollama:granite3.2-vision``...) or a ``Captioner``.
        caption_prompt: ``describe``, ``extract_text`` or ``chart``.
        allow_fetch: let HTML/Markdown fetch the remote or local images they reference.
        max_file_bytes: files over this size are refused (reported, not read).
        docling_serve: URL of a Docling Serve instance to convert with (instead of in process).
        timeout: seconds one file may spend in Docling (which then runs in a worker process,
            killed and replaced when a file overruns: the file is reported, the batch goes on);
            None converts in this process with no limit.
        tenant: access label stored on every chunk; searches with ``RagContext(tenant=...)``
            see only their tenant's chunks.
        tags: access labels stored on every chunk (``RagContext(tags=...)`` admits a chunk
            carrying any of them). Re-ingesting with other labels replaces the file's chunks.
        context: an object with ``store_uri``, ``collection`` and ``embeddings``
            (a ``RagContext``) supplying what ``uri``/``collection``/``embeddings`` leave out.

    Raises:
        FileNotFoundError: a path does not exist (checked before any work).
        ingestion.store.StoreLockedError: another process holds the store.
    """
    start = time.perf_counter()
    model = None
    if context is not None:
        uri = uri or context.store_uri
        collection = collection or context.collection
        given = getattr(context, "embeddings", None)
        if isinstance(given, str):
            embeddings = given if embeddings == EMBEDDED else embeddings
        elif given is not None:  # an Embeddings instance (chunk sizes still use the embedded tokenizer)
            model = given
    files = list(discover(paths, exclude, include))
    if index is None:
        if not uri or not collection:
            raise ValueError("ingest needs uri and collection (or context=RagContext(...))")
        index = open_index(uri, collection, model or load_embeddings(embeddings), hybrid=hybrid)
    tokenizer = chunk_tokenizer(embeddings)
    describer = load_captioner(captioner, prompt=caption_prompt)
    options = ConvertOptions(
        allow_fetch=allow_fetch, max_file_bytes=max_file_bytes, docling_serve=docling_serve, timeout=timeout
    )
    labels = access_labels(tenant, tags)
    report = IngestReport()

    def prepare(path: Path) -> list[Document]:
        doc = convert(path, options)
        return chunk_document(
            doc, source=str(path.resolve()), tokenizer=tokenizer, captioner=describer, labels=labels
        )

    bar = tqdm(total=len(files), desc="ingest", unit="file", disable=not progress)
    group: list[tuple[FileResult, list[Document]]] = []

    def finish(result: FileResult) -> None:
        report.files.append(result)
        bar.update(1)
        if on_file:
            on_file(result)

    def store_group() -> None:
        """Embed the group's new chunks in one call and store them in one insert (all or none);
        if either fails, each file on its own, so the error lands on the file that caused it."""
        vectors = _embed_new(index, [c for _, chunks in group for c in chunks])
        try:
            if vectors is None:
                raise RuntimeError("the group's embedding failed")
            new = [c for _, chunks in group for c in chunks if c.id in vectors]
            index.add(new, vectors=[vectors[str(c.id)] for c in new])
            for result, chunks in group:
                result.added = sum(1 for c in chunks if c.id in vectors)
        except Exception:  # noqa: BLE001 - retried file by file, where the error gets a name
            for result, chunks in group:
                try:
                    if vectors is None:  # each file embeds on its own
                        result.added = index.add(chunks)
                    else:
                        fresh = [c for c in chunks if c.id in vectors]
                        result.added = index.add(fresh, vectors=[vectors[str(c.id)] for c in fresh])
                except Exception as exc:  # one bad file must not stop the batch
                    result.error = f"{result.path}: {exc}"
        stored = [(r, c) for r, c in group if r.error is None and c]
        try:  # earlier versions of the stored files go, in one query for the group
            removed = index.delete_stale_many(
                {c[0].metadata["source"]: c[0].metadata["doc_hash"] for _, c in stored}
            )
            for result, chunks in stored:
                result.removed_stale = removed[chunks[0].metadata["source"]]
        except Exception as exc:  # noqa: BLE001 - the files are stored; their old versions stay
            for result, _ in stored:
                result.error = f"{result.path}: stored, but its earlier version could not be removed: {exc}"
        for result, _ in group:
            finish(result)
        group.clear()

    # Conversion and chunking run ahead in background threads (up to AHEAD_FILES files) while
    # this thread embeds and stores, so they overlap the embedding of a whole group: one
    # thread locally (Docling's converter is used by one thread at a time), several when a
    # Docling Serve instance does the work. Chunks are embedded EMBED_GROUP at a time
    # across files: sentence-transformers sorts a batch by length, so one large call pads far
    # less than one small call per file (measured: 1.5x faster on HotpotQA passages).
    for path, prepared in _ahead(files, prepare, 4 if docling_serve else 1, AHEAD_FILES):
        result = FileResult(path=str(path))
        try:
            chunks = prepared.result()
        except Exception as exc:  # one bad file must not stop the batch
            result.error = str(exc) if str(path) in str(exc) else f"{path}: {exc}"
            finish(result)
            continue
        result.chunks = len(chunks)
        for chunk in chunks:
            result.kinds[chunk.metadata["kind"]] = result.kinds.get(chunk.metadata["kind"], 0) + 1
        group.append((result, chunks))
        if sum(len(c) for _, c in group) >= EMBED_GROUP:
            store_group()
    store_group()
    bar.close()
    position = {str(path): i for i, path in enumerate(files)}
    report.files.sort(key=lambda r: position[r.path])
    index.flush()
    report.total_chunks_in_store = index.count()
    report.seconds = time.perf_counter() - start
    return report


def access_labels(tenant: str | None, tags: Iterable[str]) -> dict[str, Any]:
    """The access labels to store on chunks, checked: a tenant string, a list of tag strings."""
    tags = [tags] if isinstance(tags, str) else list(tags)
    if tenant is not None and (not isinstance(tenant, str) or not tenant):
        raise ValueError(f"ingest: tenant={tenant!r}: expected a non-empty string")
    if not all(isinstance(t, str) and t for t in tags):
        raise ValueError(f"ingest: tags={tags!r}: expected non-empty strings")
    labels: dict[str, Any] = {}
    if tenant is not None:
        labels[TENANT_FIELD] = tenant
    if tags:
        labels[TAGS_FIELD] = sorted(set(tags))
    return labels


def _embed_new(index: ChunkIndex, chunks: list[Document]) -> dict[str, list[float]] | None:
    """Vectors of the chunks not stored yet, by chunk id, in one embedding call (None if it failed)."""
    known = index.existing_ids([str(c.id) for c in chunks])
    fresh = {str(c.id): c.page_content for c in chunks if str(c.id) not in known}
    if not fresh:
        return {}
    try:
        return dict(zip(fresh, index.embeddings.embed_documents(list(fresh.values())), strict=True))
    except Exception:  # noqa: BLE001 - retried file by file, where the error gets a name
        return None


def _ahead(
    files: list[Path], prepare: Callable[[Path], T], workers: int, depth: int
) -> Iterator[tuple[Path, Future[T]]]:
    """``prepare(path)`` for each file in order, by ``workers`` threads, up to ``depth`` files ahead."""
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ingest-convert") as pool:
        pending: deque[tuple[Path, Future[T]]] = deque()
        for path in files:
            pending.append((path, pool.submit(prepare, path)))
            if len(pending) > max(depth, workers):
                yield pending.popleft()
        while pending:
            yield pending.popleft()
