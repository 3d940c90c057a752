"""Storing a group of files' chunks: all of a file or none of it, and the error on the right file.

Chunks are embedded and inserted a group of files at a time (one large
embedding call pads far less than one per file). When the group's embedding
or its insert fails, each file is stored on its own, so the error lands on
the file that caused it and the others are still stored. Earlier versions of
the stored files are removed afterwards, in one query for the group; while a
changed file has both versions stored, a record of the writer's own on the collection
(``store.replacing``) lets every search see one version, on a Milvus server too, whenever the
writer is killed; the next writer or the next process to open the collection finishes it.
With an entity extractor, entity rows are written before the chunks that name them, and the
group's chunks are embedded in a thread of their own meanwhile (MiniLM on one torch thread while
spaCy runs on the other core: the chunks' vectors came out bit for bit as on torch's two threads),
in pieces that the main thread helps with once the entities are written (``ChunkPieces``); the
new entities' names are embedded in pieces by two threads as well.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from rag_graphs.entity_graph.build import add_entities, embed_on_one_thread
from rag_graphs.entity_graph.entities import Extractor, annotate
from rag_graphs.ingestion.report import FileResult
from rag_graphs.store.fields import ENTITIES_FIELD
from rag_graphs.store.index import ChunkIndex
from rag_graphs.store.replacing import Replacement, finish_committed
from rag_graphs.store.sentences import children_of, has_sentences, sentence_rows

Group = list[tuple[FileResult, list[Document]]]
"""Files ready to store: each file's result (filled in here) and its complete list of chunks."""
Vectors = dict[str, list[float]]
K = TypeVar("K", str, int)


def store_group(index: ChunkIndex, group: Group, extractor: Extractor | None = None) -> None:
    """Store the group's chunks, setting each result's ``added``, ``removed_stale`` or ``error``.

    With an entity ``extractor`` (a graph-enabled collection), the new chunks get
    their entities first (stored on the chunk rows) and the stored ones are
    recorded in the entity collection, so graph search sees them at once.
    """
    with GroupEmbedding(index, group, extractor) as embedding:
        vectors = embedding.finish()
    write_group(index, group, vectors)


def write_group(index: ChunkIndex, group: Group, vectors: Vectors | None) -> None:
    """The second half of ``store_group``: the group's chunks inserted with ``vectors`` (file by
    file, each embedded on its own, when the group's insert or embedding failed), then earlier
    versions of its files removed and its sentence rows kept current."""
    finish_committed(index)  # what a writer killed after its commit left (on a server: any time)
    changed = index.changed_sources(_versions(group))
    replacement = Replacement(index, changed)
    if changed:
        replacement.begin()  # the new versions stay hidden until all stored (store.replacing)
    if vectors is None or not _store_together(index, group, vectors):
        _store_each(index, group, vectors)
    stored = [(r, c) for r, c in group if r.error is None and c]
    if changed:
        replacement.commit({s: h for s, h in _versions(stored).items() if s in changed})  # the commit point
    _remove_stale(index, stored)
    if changed and not any(r.error for r, _ in stored):
        replacement.end()  # else the committed record keeps the old versions hidden until finished
    _keep_sentences(index, stored)


def _versions(group: Group) -> dict[str, str]:
    """source -> doc_hash of the group's files that have chunks."""
    return {c[0].metadata["source"]: c[0].metadata["doc_hash"] for _, c in group if c}


class GroupEmbedding:
    """The first half of ``store_group``, started in the background: the vectors of the group's
    new chunks and, with an ``extractor``, their entities recorded in the entity rows.

    Constructing it starts the chunks' embedding, in pieces (``ChunkPieces``), in a thread of its
    own; ``finish`` then runs spaCy on this thread, embeds the new entities' names in pieces by
    a second thread and this one (one call of up to 1,024 names in one thread, this one waiting,
    was each group's tail: BENCHMARKS.md, "Round 3: overlap"), writes the entity rows, and takes
    the chunk pieces still waiting, so both cores embed until the group is done (with bf16
    embedding, NER plus names take about as long as the chunks). Between the two, this thread is
    free: ingest writes the group before there (``write_group``), so the chunks embed while
    Milvus stores instead of one core idling at every group's end (BENCHMARKS.md, "Round 8").
    Every embedding runs on one torch thread (``embed_on_one_thread``); every store call stays on
    the constructing thread. Entity rows are written before any chunk: a chunk stored with its
    ``entities`` is then always in the graph, even after a ``kill -9`` (an entity row listing a
    chunk never stored is harmless). Use it as a context manager: leaving early stops the pieces.
    """

    def __init__(self, index: ChunkIndex, group: Group, extractor: Extractor | None = None) -> None:
        self.index, self.extractor = index, extractor
        self.chunks = [c for _, chunks in group for c in chunks]
        known = index.existing_ids([str(c.id) for c in self.chunks])
        self.fresh = [c for c in self.chunks if str(c.id) not in known]
        self.pieces = ChunkPieces(index.embeddings, {str(c.id): c.page_content for c in self.fresh})
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="ingest-embed")
        self._background = self._pool.submit(self.pieces.work)

    def __enter__(self) -> GroupEmbedding:
        return self

    def __exit__(self, *_: object) -> None:
        self.pieces.stop()  # an early exit: the piece running ends, no other starts
        self._pool.shutdown(wait=True)

    def finish(self) -> Vectors | None:
        """The new chunks' vectors by id (None if embedding failed), the entity rows written."""
        if self.extractor is not None:
            names = annotate(self.fresh, self.extractor)
            tagged = [c for c in self.chunks if ENTITIES_FIELD in c.metadata]
            add_entities(self.index, tagged, names, embed=self._embed_names)
        self.pieces.work()
        self._background.result()
        return self.pieces.vectors()

    def _embed_names(self, labels: list[str]) -> list[list[float]]:
        """The names' vectors, in pieces by the second thread and this one."""
        parts = ChunkPieces(self.index.embeddings, dict(enumerate(labels)), NAME_PIECE, names=True)
        helper = self._pool.submit(parts.work)
        parts.work()
        helper.result()
        found = parts.vectors()
        if found is None:
            raise parts.error or RuntimeError("embedding the new entities' names failed")
        return [found[i] for i in range(len(labels))]


PIECE = 64
"""Chunks per piece of a group's embedding: two of sentence-transformers' batches of 32, so a
piece costs ~1.3 s in bf16 (~4 s in float32) and the thread that finishes first waits at most
that long for the other."""
NAME_PIECE = 128
"""Entity names per piece (a few tokens each: ~0.1 s a piece in bf16)."""


class ChunkPieces(Generic[K]):
    """A group's chunk texts, longest first, cut into ``PIECE``-sized pieces that any thread
    embeds (``work``: take the next piece until none is left), each on one torch thread.

    Longest first, as sentence-transformers orders one call: pieces of consecutive lengths pad
    about as little as the group's one call did. A failed piece stops the rest: the group then
    has no vectors and is stored file by file, where the error gets its file's name.
    """

    def __init__(
        self, embeddings: Embeddings, texts: dict[K, str], size: int = PIECE, names: bool = False
    ) -> None:
        self._embeddings = embeddings
        self._names = names  # entity names: embedded through ``_embed_names`` (benchmarks tell them apart)
        ids = sorted(texts, key=lambda i: -len(texts[i]))
        self._pieces: list[list[tuple[K, str]]] = [
            [(i, texts[i]) for i in ids[n : n + size]] for n in range(0, len(ids), size)
        ]
        self._next = 0
        self._done: dict[K, list[float]] = {}
        self._failed = False
        self.error: Exception | None = None  # a failed names' piece's (chunks' pieces report none)
        self._lock = threading.Lock()

    def work(self) -> None:
        """Embed pieces until none is left (or one failed)."""
        while True:
            with self._lock:
                if self._failed or self._next >= len(self._pieces):
                    return
                piece = self._pieces[self._next]
                self._next += 1
            try:
                found = (_embed_names if self._names else _embed)(self._embeddings, dict(piece))
            except Exception as exc:  # noqa: BLE001 - the caller raises it (names) or stores file by file
                found, self.error = None, self.error or exc
            with self._lock:
                if found is None:
                    self._failed = True
                else:
                    self._done.update(found)

    def stop(self) -> None:
        """Start no further piece (the ones running finish)."""
        with self._lock:
            self._next = len(self._pieces)

    def vectors(self) -> dict[K, list[float]] | None:
        """Chunk id -> vector of every text, once every ``work`` call has returned; None if a piece failed."""
        return None if self._failed else self._done


def _embed(embeddings: Embeddings, texts: dict[K, str]) -> dict[K, list[float]] | None:
    """Chunk id -> vector of ``texts`` (id -> text) in one call on one torch thread
    (``embed_on_one_thread``); None if it failed."""
    if not texts:
        return {}
    try:
        return dict(zip(texts, embed_on_one_thread(embeddings, list(texts.values())), strict=True))
    except Exception:  # noqa: BLE001 - retried file by file, where the error gets a name
        return None


def _embed_names(embeddings: Embeddings, texts: dict[K, str]) -> dict[K, list[float]] | None:
    """``_embed`` for entity names, raising what the model raised (``add_entities`` fails with it,
    as before the pieces); its own name, so ``bench/ingest_throughput.py`` counts names apart from
    chunks when both are embedded in pieces in the same threads."""
    return dict(zip(texts, embed_on_one_thread(embeddings, list(texts.values())), strict=True))


def _store_together(index: ChunkIndex, group: Group, vectors: Vectors) -> bool:
    """The group's new chunks in one insert (all or none); False when it failed."""
    try:
        _add_embedded(index, [c for _, chunks in group for c in chunks], vectors)
    except Exception:  # noqa: BLE001 - retried file by file, where the error gets a name
        return False
    for result, chunks in group:
        result.added = len({c.id for c in chunks if c.id in vectors})  # what the store gained
    return True


def _store_each(index: ChunkIndex, group: Group, vectors: Vectors | None) -> None:
    """Each file's chunks in its own insert (embedded on its own when the group's embedding failed)."""
    for result, chunks in group:
        try:
            result.added = index.add(chunks) if vectors is None else _add_embedded(index, chunks, vectors)
        except Exception as exc:  # one bad file must not stop the batch
            result.error = f"{result.path}: {exc}"


def _add_embedded(index: ChunkIndex, chunks: list[Document], vectors: Vectors) -> int:
    """Insert the chunks that have a vector in ``vectors`` (the new ones), with those vectors."""
    fresh = [c for c in chunks if c.id in vectors]
    return index.add(fresh, vectors=[vectors[str(c.id)] for c in fresh])


def _keep_sentences(index: ChunkIndex, stored: Group) -> None:
    """A collection with sentence rows (small-to-big) keeps them current: the new chunks get
    theirs, earlier versions' go. One existence check per group when it has none."""
    if not stored or not has_sentences(index):
        return
    try:
        children = children_of(index)
        children.add([s for _, chunks in stored for c in chunks for s in sentence_rows(c)])
        children.delete_stale_many({c[0].metadata["source"]: c[0].metadata["doc_hash"] for _, c in stored})
    except Exception as exc:  # noqa: BLE001 - the chunks are stored; their sentences lag
        for result, _ in stored:
            result.error = f"{result.path}: stored, but its sentence rows could not be updated: {exc}"


def _remove_stale(index: ChunkIndex, stored: Group) -> None:
    """Delete earlier versions of the stored files, in one query for the group."""
    try:
        removed = index.delete_stale_many(
            {c[0].metadata["source"]: c[0].metadata["doc_hash"] for _, c in stored}
        )
        for result, chunks in stored:
            result.removed_stale = removed[chunks[0].metadata["source"]]
    except Exception as exc:  # noqa: BLE001 - the files are stored; their old versions stay
        for result, _ in stored:
            result.error = f"{result.path}: stored, but its earlier version could not be removed: {exc}"
