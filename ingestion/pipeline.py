"""``ingest(sources, *, index, options)``: convert, chunk, embed and store, with a progress bar
and a report.

A bad file never stops the batch and never half-writes: each file's chunks
are built completely before any of them is stored, and a failure is recorded
in the report with the file's name. One entry, three parts: what to ingest (paths, URLs,
in-memory ``Text``s), where it goes (an open ``ChunkIndex``, or a ``RagContext`` naming a store,
collection and embedding model), and what to do with the files (one ``IngestOptions``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.documents import Document

from rag_graphs.config.context import RagContext
from rag_graphs.config.fields import DEFAULT_STORE_URI
from rag_graphs.entity_graph.entities import Extractor, load_extractor
from rag_graphs.entity_graph.rows import has_graph
from rag_graphs.ingestion.ahead import ahead
from rag_graphs.ingestion.convert.captioning import load_captioner
from rag_graphs.ingestion.convert.chunking import chunk_document
from rag_graphs.ingestion.convert.counting import counting
from rag_graphs.ingestion.convert.discover import find_files
from rag_graphs.ingestion.convert.entry import convert
from rag_graphs.ingestion.options import IngestOptions, access_labels, with_context_labels
from rag_graphs.ingestion.report import FileResult, IngestReport
from rag_graphs.ingestion.sources import Source, Sources, Text
from rag_graphs.ingestion.storing import Group, GroupEmbedding, Vectors, write_group
from rag_graphs.ingestion.unchanged import UnchangedFiles
from rag_graphs.store.embeddings import (
    EMBEDDED,
    chunk_tokenizer,
    embeddings_identity,
    load_embeddings,
    loaded_spec,
)
from rag_graphs.store.files import FileRecord, FileRecords
from rag_graphs.store.index import ChunkIndex, open_index
from rag_graphs.store.lite import is_local
from rag_graphs.support.progress import progress_bar

log = logging.getLogger(__name__)

__all__ = ["FileResult", "IngestOptions", "IngestReport", "access_labels", "ingest"]

EMBED_GROUP = 256  # chunks embedded per call, across files
FIRST_GROUP = 64  # the first group's chunks: embedding and NER start while the next files convert
AHEAD_FILES = 16  # files converted ahead at least; beyond, until two groups of chunks wait (ahead.py)

Embedded = tuple[Group, Vectors | None]
"""A group embedded, its entities recorded, its chunks not written yet: the vectors of its new
chunks (None when the embedding failed: ``write_group`` embeds file by file)."""


def ingest(
    sources: Source | Iterable[Source],
    *,
    index: ChunkIndex | RagContext | None = None,
    options: IngestOptions | None = None,
) -> IngestReport:
    """Ingest files, folders, URLs and in-memory texts into one Milvus collection.

    Args:
        sources: one source or several: files or folders (folders recurse; hidden files
            skipped), ``http(s)://`` URLs (fetched first under an SSRF guard,
            ``rag_graphs.ingestion.convert.urls``), or texts held in memory (``Text``, stored as
            ``text://<name>``): ``rag_graphs.ingestion.sources``.
        index: where the chunks go: an open ``ChunkIndex`` (the spec ``load_embeddings`` loaded
            its model from, else the embedded model's, names the tokenizer bounding chunks), or a
            ``RagContext`` (its ``store_uri``, ``collection`` and ``embeddings``: the collection is
            opened, with BM25 + dense when new); None: ``RagContext()``, the store the environment
            names (``RAG_GRAPHS_STORE_URI``...) or the default one.
        options: which files to take, how to convert, caption and label them, how to report
            (``IngestOptions``; its defaults when not given). An access label it leaves unset is
            the context's (``RagContext.tenant``/``tags``: ``index``, or ``RAG_GRAPHS_TENANT``/
            ``RAG_GRAPHS_TAGS`` for a ``ChunkIndex``): the chunks are stored where the searches
            of that setting look (``options.with_context_labels``).

    Raises:
        TypeError: ``options`` is not an ``IngestOptions`` or ``index`` neither a ``ChunkIndex``
            nor a ``RagContext`` (a misspelt option is ``IngestOptions``' own ``TypeError``).
        ValueError: an access label is not a non-empty string.
        FileNotFoundError: a path does not exist (checked before any work).
        ingestion.store.lite.StoreLockedError: another process holds the store.
    """
    start = time.perf_counter()
    options = options if options is not None else IngestOptions()
    if not isinstance(options, IngestOptions):
        raise TypeError(f"ingest: options={options!r}: expected IngestOptions(...)")
    if index is None:
        index = RagContext()
    if not isinstance(index, ChunkIndex | RagContext):
        raise TypeError(f"ingest: index={index!r}: expected a ChunkIndex or a RagContext")
    options = with_context_labels(options, index if isinstance(index, RagContext) else None)
    if isinstance(sources, str | Path | Text):
        sources = [sources]
    gathered = Sources.gather(sources, max_bytes=options.max_file_bytes, allow_private=options.allow_fetch)
    found = find_files(
        gathered.paths,  # URLs and texts replaced by their files
        exclude=options.exclude,
        include=options.include,
        follow_links=options.follow_links,
        avoid=own_folders(index.uri if isinstance(index, ChunkIndex) else index.store_uri),
    )
    files = found.files
    report = IngestReport()
    wanted = options.entities
    chosen = load_extractor(wanted) if wanted not in (None, "auto") else None  # bad spec: now
    index, embeddings = _opened(index)
    extractor: Extractor | None = chosen
    if chosen is not None:
        named = wanted if isinstance(wanted, str) else "your extractor"
        report.graph = f"entity graph: built ({named}; graph search is on)"
    else:
        extractor, report.graph = _graph_extractor(index, auto=wanted == "auto")
    records = FileRecords(index, options.chunk_settings(embeddings, embeddings_identity(index.embeddings)))
    lookup = UnchangedFiles(files, records, gathered.source, options.max_file_bytes, skip_check=options.force)
    prepare = _preparer(options, embeddings, gathered.source, lookup)
    # One thread converts locally (Docling's converter is used by one thread at a time), several
    # when a Docling Serve instance does the work.
    workers = 4 if options.docling_serve else 1
    report.skipped = found.skipped
    unchanged = 0
    with progress_bar(total=len(files), desc="ingest", unit="file", disable=not options.progress) as bar:
        for result in _ingest_files(index, files, prepare, workers, extractor, records):
            report.files.append(result)
            if result.unchanged:  # counted here: report.unchanged lists every file (quadratic)
                unchanged += 1
                bar.set_postfix_str(f"{unchanged} unchanged", refresh=False)
            bar.update(1)
            if options.on_file:
                options.on_file(result)
    position = {str(path): i for i, path in enumerate(files)}
    report.files.sort(key=lambda r: position[r.path])
    report.files += [FileResult(path=r.path, error=str(r)) for r in found.refused]
    report.files += [FileResult(path=url, error=why) for url, why in gathered.failed.items()]
    for result in report.files:  # a fetched page shows as its URL, a text as its text:// name
        result.path, result.error = (
            gathered.origin.get(result.path, result.path),
            gathered.named(result.error),
        )
    gathered.close()
    index.flush()
    report.total_chunks_in_store = index.count()
    if extractor is not None and not has_graph(index):  # nothing was stored to find entities in
        report.graph = "entity graph: none yet (no chunk stored)"
    report.seconds = time.perf_counter() - start
    return report


def own_folders(uri: str | None) -> dict[Path, str]:
    """The folders an ingest never reads, each with why: the local store written to (its
    Milvus Lite files gave one FAILED line each) and rag-graphs' default folder."""
    own = {Path(DEFAULT_STORE_URI).parent: "rag-graphs' own folder (default store, checkpoints): not read"}
    if uri and is_local(uri):
        own[Path(uri).expanduser()] = "the store this ingest writes to (its own files): not read"
    return own


def _opened(index: ChunkIndex | RagContext) -> tuple[ChunkIndex, str]:
    """The index to write and the embeddings spec whose tokenizer bounds chunk sizes: a
    ``RagContext``'s collection opened (once per process, ``open_index``) with its model (a spec
    loaded, an instance used as is); for a model that is no spec, the embedded tokenizer counts."""
    if isinstance(index, ChunkIndex):
        return index, loaded_spec(index.embeddings) or EMBEDDED
    given = index.embeddings
    model = load_embeddings(given) if isinstance(given, str) else given
    opened = open_index(index.store_uri, index.collection, model)
    return opened, given if isinstance(given, str) else EMBEDDED


@dataclass
class Prepared:
    """One file made ready to store: its complete list of chunks, or the record showing it is
    stored already (``unchanged``: not converted); ``digest`` is its bytes' hash and size."""

    chunks: list[Document] = field(default_factory=list)
    digest: tuple[str, int] | None = None
    unchanged: FileRecord | None = None


def _preparer(
    options: IngestOptions,
    embeddings: str,
    source: Callable[[Path], str],
    lookup: UnchangedFiles,
) -> Callable[[Path], Prepared]:
    """The function that turns one file into its complete list of chunks (convert, chunk, caption),
    unless ``lookup`` shows its bytes stored already under the same chunk settings (checked a
    window of files at a time); ``source`` names the file in its chunks (its real path, or the
    URL it was fetched from)."""
    tokenizer = counting(chunk_tokenizer(embeddings))  # each text counted once (counting.py)
    describer = load_captioner(options.captioner, prompt=options.caption_prompt)
    convert_options, labels = options.convert_options(), options.labels

    def prepare(path: Path) -> Prepared:
        digest, record = lookup.check(path)
        if record is not None:
            return Prepared(digest=digest, unchanged=record)
        doc = convert(path, convert_options)  # a bad file fails here, named (before ``source``)
        chunks = chunk_document(
            doc, source=source(path), tokenizer=tokenizer, captioner=describer, labels=labels
        )
        return Prepared(chunks, digest)

    return prepare


def _graph_extractor(index: ChunkIndex, *, auto: bool) -> tuple[Extractor | None, str]:
    """Who finds the new chunks' entities, and the report's line saying so: spaCy when the
    collection has an entity graph (so it stays current) or, with ``auto`` (the default), when
    the collection is new; else none. A collection stored without a graph is not given one here:
    only the new chunks would join it, and graph search over part of a collection ranks the rest
    out (``rag-graphs graph build`` annotates every chunk)."""
    stored = index.count()
    if stored and has_graph(index):
        return load_extractor("spacy"), "entity graph: kept current (spaCy)"
    if auto and not stored:
        return load_extractor(
            "spacy"
        ), "entity graph: built (spaCy NER; graph search is on, --no-graph skips it)"
    if auto:
        return None, (
            "entity graph: none, the collection was stored without one "
            f"(`rag-graphs graph build --collection {index.collection}` adds it; hybrid search until then)"
        )
    return None, "entity graph: none (--no-graph; hybrid search)"


def _ingest_files(
    index: ChunkIndex,
    files: list[Path],
    prepare: Callable[[Path], Prepared],
    workers: int,
    extractor: Extractor | None = None,
    records: FileRecords | None = None,
) -> Iterator[FileResult]:
    """Each file's result, once it is stored or has failed.

    Conversion and chunking run ahead in background threads while this thread embeds and
    stores, until two groups' chunks wait converted (``rag_graphs.ingestion.ahead``: the next
    group is ready when this one is stored; with 16 files ahead the main thread waited ~1.5 s
    for the converter at every group of 1,000 HotpotQA passages, one core idle). Chunks are
    embedded EMBED_GROUP at a time across files: sentence-transformers sorts a batch by
    length, so one large call pads far less than one small call per file (measured: 1.5x
    faster on HotpotQA passages); the first group is FIRST_GROUP chunks, so the embedding and
    NER threads start after a few files instead of a whole group's conversion. Each group is
    written while the next one embeds (``_embedded``). A file
    unchanged since it was stored is reported without converting; each stored file's record
    is written after its chunks (``rag_graphs.store.files``).
    """
    group: Group = []
    digests: dict[str, tuple[str, int] | None] = {}
    size = min(FIRST_GROUP, EMBED_GROUP)
    converted = ahead(
        files, prepare, lambda p: len(p.chunks), workers=workers, budget=2 * EMBED_GROUP, least=AHEAD_FILES
    )
    unwritten: Embedded | None = None
    for path, prepared in converted:
        result, chunks = _prepared(path, prepared, digests)
        if result.error is not None or result.unchanged:
            yield result
            continue
        group.append((result, chunks))
        if sum(len(c) for _, c in group) >= size:
            size = EMBED_GROUP
            unwritten = yield from _embedded(index, group, extractor, unwritten, records, digests)
            group = []
    unwritten = yield from _embedded(index, group, extractor, unwritten, records, digests)
    if unwritten is not None:
        yield from _written(index, unwritten, records, digests)


def _embedded(
    index: ChunkIndex,
    group: Group,
    extractor: Extractor | None,
    before: Embedded | None,
    records: FileRecords | None,
    digests: dict[str, tuple[str, int] | None],
) -> Generator[FileResult, None, Embedded | None]:
    """Embed ``group`` (and record its entities) while this thread writes the group ``before``
    it and reports its files; return the group, embedded, to write next.

    Why one group behind: writing a group (its chunks' insert, earlier versions' delete, the file
    records) is Milvus calls on this thread, ~0.5 s a group, and the other core idled through
    them; now the next group's chunks embed meanwhile (``storing.GroupEmbedding``). No store call
    leaves this thread, and every chunk id names its file, so a group never holds a chunk of the
    group before it; the entity rows of the group before are written before this one's are
    looked up."""
    if not group:
        if before is not None:
            yield from _written(index, before, records, digests)
        return None
    with GroupEmbedding(index, group, extractor) as embedding:
        if before is not None:
            yield from _written(index, before, records, digests)
        return group, embedding.finish()


def _prepared(
    path: Path, prepared: Future[Prepared], digests: dict[str, tuple[str, int] | None]
) -> tuple[FileResult, list[Document]]:
    """The file's chunks and its result so far (chunk counts, or the error naming the file).

    A chunk id hashes the chunk's text and place, so identical chunks of one file (a CSV of
    repeated rows) are one chunk: they are merged here and counted as ``merged``, so every
    count after this one (chunks, new, already stored) is of what the store can hold."""
    result = FileResult(path=str(path))
    try:
        ready = prepared.result()
    except Exception as exc:  # one bad file must not stop the batch
        result.error = str(exc) if str(path) in str(exc) else f"{path}: {exc}"
        return result, []
    if ready.unchanged is not None:
        result.chunks, result.kinds = ready.unchanged.chunks, dict(ready.unchanged.kinds)
        result.unchanged = True
        return result, []
    digests[str(path)], chunks = ready.digest, ready.chunks
    unique = list({str(c.id): c for c in chunks}.values())  # identical chunks share an id: stored once
    result.chunks, result.merged, chunks = len(unique), len(chunks) - len(unique), unique
    for chunk in chunks:
        result.kinds[chunk.metadata["kind"]] = result.kinds.get(chunk.metadata["kind"], 0) + 1
    return result, chunks


def _written(
    index: ChunkIndex,
    embedded: Embedded,
    records: FileRecords | None,
    digests: dict[str, tuple[str, int] | None],
) -> list[FileResult]:
    """Write an embedded group (``storing.write_group``), record its stored files (after their
    chunks: a file recorded is a file stored) and return their results."""
    group, vectors = embedded
    write_group(index, group, vectors)
    if records is not None:
        records.put(
            [
                FileRecord(
                    source=chunks[0].metadata["source"],
                    content_hash=digest[0],
                    size=digest[1],
                    settings=records.settings,
                    doc_hash=chunks[0].metadata["doc_hash"],
                    chunks=result.chunks,
                    kinds=dict(result.kinds),
                )
                for result, chunks in group
                if result.error is None and chunks and (digest := digests.pop(result.path, None)) is not None
            ]
        )
    return [result for result, _ in group]
