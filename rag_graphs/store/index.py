"""The Milvus collection that holds every chunk, and the only code that talks to it.

The URI alone picks the deployment: a local path is Milvus Lite (one process
at a time), ``http://host:19530`` is Milvus standalone/distributed, a Zilliz
URI (with ``MILVUS_TOKEN``) is Zilliz Cloud. Hybrid search (BM25 + dense,
fused by reciprocal rank fusion inside Milvus) is decided when the collection
is created; an existing collection keeps what it was created with.

The index and search parameters (``rag_graphs.store.fields``) are the ones measured to work on
Milvus Lite 3.2.2 with langchain-milvus 0.4.0 (see docs/architecture.md). Filters, the Milvus Lite path
checks, the reads and the collection primitive every read and write goes through live beside this
module (``filters``, ``lite``, ``reads``, ``collection``).
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from rag_graphs.store.derived import forget_derived
from rag_graphs.store.embeddings import embeddings_identity
from rag_graphs.store.failures import server_failure
from rag_graphs.store.fields import (
    _BATCH,
    _DENSE_INDEX,
    _DENSE_SEARCH,
    _SPARSE_INDEX,
    _SPARSE_SEARCH,
    DENSE_FIELD,
    EMBEDDINGS_PROPERTY,
    PRIMARY_FIELD,
    SPARSE_FIELD,
    TEXT_FIELD,
    VERSION_PROPERTY,
)
from rag_graphs.store.files import FileRecords
from rag_graphs.store.filters import quote
from rag_graphs.store.generations import bump_generation
from rag_graphs.store.lite import (
    StoreLockedError,
    _held_by_other_process,
    _lock_message,
    _served_here,
    check_manifests,
    check_store_path,
    is_local,
)
from rag_graphs.store.reads import IndexReads
from rag_graphs.store.replacing import finish_committed, finish_legacy, roll_back_inserting
from rag_graphs.store.writing import StoreWriteError, schema_change, store_lock
from rag_graphs.support.quiet import LOCAL_GRPC_OPTIONS, quiet_milvus_lite

log = logging.getLogger(__name__)


def file_batches(chunks: Sequence[Document], size: int) -> list[tuple[int, int]]:
    """``(start, end)`` slices of ``chunks`` of at most ``size`` that keep each file's
    (``metadata["source"]``) consecutive chunks in one slice, unless they alone exceed ``size``."""
    runs: list[tuple[int, int]] = []  # each file's consecutive chunks
    for i, chunk in enumerate(chunks):
        if runs and chunks[runs[-1][0]].metadata.get("source") == chunk.metadata.get("source"):
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    slices: list[tuple[int, int]] = []
    for start, end in runs:
        if slices and end - slices[-1][0] <= size:
            slices[-1] = (slices[-1][0], end)  # the file fits in the open batch
        elif end - start <= size:
            slices.append((start, end))
        else:  # a file bigger than a batch: split it, and nothing else joins its pieces
            slices += [(i, min(i + size, end)) for i in range(start, end, size)]
            slices.append((end, end))  # closes the last piece
    return [(a, b) for a, b in slices if b > a]


@dataclass
class ChunkIndex(IndexReads):
    """One Milvus collection of chunks, embedded with one embedding model.

    Chunk ids are strings derived from content and provenance (see
    ``rag_graphs.ingestion.convert.chunking``), so adding the same chunk twice stores it once.
    """

    uri: str
    collection: str
    embeddings: Embeddings
    hybrid: bool = True
    _fields: list[str] | None = field(default=None, init=False, repr=False)
    checked_model: Embeddings | None = field(default=None, init=False, repr=False)
    """The embedding model ``store.checks.check_dimension`` accepted for this collection."""

    def __post_init__(self) -> None:
        from langchain_milvus import BM25BuiltInFunction

        from rag_graphs.store.vectorstore import ChunkVectorStore

        bump_generation(self.uri, self.collection)  # a new client may see a recreated collection
        if is_local(self.uri):
            check_store_path(self.uri)
            check_manifests(self.uri)
            Path(self.uri).expanduser().parent.mkdir(parents=True, exist_ok=True)
            # probed before Milvus Lite starts, which would log its own traceback first
            if not _served_here(self.uri) and _held_by_other_process(self.uri):
                raise StoreLockedError(_lock_message(self.uri))
        connection: dict = {"uri": self.uri}
        if is_local(self.uri):
            quiet_milvus_lite()
            connection["grpc_options"] = dict(LOCAL_GRPC_OPTIONS)
        if token := os.environ.get("MILVUS_TOKEN"):
            connection["token"] = token
        try:
            from pymilvus import MilvusClient

            client = MilvusClient(**connection)
        except Exception as exc:
            if is_local(self.uri) and _held_by_other_process(self.uri):
                raise StoreLockedError(_lock_message(self.uri)) from exc
            if not is_local(self.uri):  # unreachable, credentials refused, not Milvus: one line
                raise server_failure(self.uri, exc) from exc
            raise
        if client.has_collection(self.collection):
            fields = {f["name"] for f in client.describe_collection(self.collection)["fields"]}
            if self.hybrid and SPARSE_FIELD not in fields:
                log.warning(
                    "collection %r was created dense-only; hybrid search is off for it",
                    self.collection,
                )
            self.hybrid = SPARSE_FIELD in fields
        kwargs: dict = dict(
            embedding_function=self.embeddings,
            connection_args=connection,
            collection_name=self.collection,
            primary_field=PRIMARY_FIELD,
            text_field=TEXT_FIELD,
            auto_id=False,
            enable_dynamic_field=True,
            consistency_level="Strong",
        )
        if self.hybrid:
            kwargs |= dict(
                builtin_function=BM25BuiltInFunction(output_field_names=SPARSE_FIELD),
                vector_field=[DENSE_FIELD, SPARSE_FIELD],
                index_params=[_DENSE_INDEX, _SPARSE_INDEX],
                search_params=[_DENSE_SEARCH, _SPARSE_SEARCH],
            )
        else:
            kwargs |= dict(vector_field=DENSE_FIELD, index_params=_DENSE_INDEX, search_params=_DENSE_SEARCH)
        self.store = ChunkVectorStore(**kwargs)
        self.client = self.store.client
        self._lock = store_lock(self.uri)  # every write of this process to the store, one at a time
        self.finish_replacing()

    # -- writing -----------------------------------------------------------------
    def existing_ids(self, ids: list[str]) -> set[str]:
        """The subset of ``ids`` already stored."""
        if not ids or not self._exists():
            return set()
        return set(self.stored.get(ids, [PRIMARY_FIELD]))

    def add(self, chunks: list[Document], vectors: list[list[float]] | None = None) -> int:
        """Embed and insert the chunks not stored yet; return how many were new.

        Every chunk needs ``metadata["chunk_id"]``. Chunks already present are
        skipped before embedding, so re-ingesting costs only the lookups.
        ``vectors`` (one per chunk) skips embedding for chunks already embedded
        with this collection's model. If
        embedding or inserting fails part-way, the chunks this call inserted
        are deleted again before the error propagates. Inserts go in batches that
        never split a file's chunks unless the file alone exceeds a batch
        (``file_batches``), so a ``kill -9`` between two batches, which no rollback
        can catch, leaves only such a file part-stored.
        """
        ids = [c.metadata["chunk_id"] for c in chunks]
        if vectors is not None and len(vectors) != len(chunks):
            raise ValueError(f"add: {len(chunks)} chunks but {len(vectors)} vectors")
        with self._lock:
            created = bool(chunks) and not self._exists()  # this insert creates the collection
            known = self.existing_ids(ids)
            seen: set[str] = set()
            new, new_vectors = [], []
            for i, (cid, chunk) in enumerate(zip(ids, chunks, strict=True)):
                if cid not in known and cid not in seen:
                    seen.add(cid)
                    new.append(chunk)
                    if vectors is not None:
                        new_vectors.append(list(vectors[i]))
            inserted: list[str] = []
            try:
                for start, end in file_batches(new, _BATCH):
                    batch = new[start:end]
                    batch_ids = [c.metadata["chunk_id"] for c in batch]
                    if vectors is None:
                        self.store.add_documents(batch, ids=batch_ids)
                    else:  # already embedded (a copy from another collection): no second embedding
                        self.store.add_embeddings(
                            [c.page_content for c in batch],
                            new_vectors[start:end],
                            [dict(c.metadata) for c in batch],
                            ids=batch_ids,
                        )
                    inserted += batch_ids
            except BaseException:
                # All of a call's chunks or none: a file is never left half-stored.
                if inserted:
                    self.stored.delete(inserted)
                raise
            finally:
                if new:
                    self.mark_changed()
            if created:
                self._name_model()
        return len(new)

    def _name_model(self) -> None:
        """Store the embedding model's identity on the collection it created, so a run with
        another model is refused by name (``rag_graphs.store.checks.check_dimension``)."""
        try:
            properties = {EMBEDDINGS_PROPERTY: embeddings_identity(self.embeddings)}
            schema_change(
                self.uri,
                f"collection {self.collection!r}'s embedding model",
                lambda: self.stored.set_properties(properties),
            )
        except Exception as exc:  # noqa: BLE001 - the dimension check still guards it
            log.warning("collection %r: could not store its embedding model: %s", self.collection, exc)

    def delete_stale(self, source: str, doc_hash: str) -> int:
        """Delete chunks of ``source`` from other versions of the file."""
        return self.delete_stale_many({source: doc_hash})[source]

    def delete_stale_many(self, versions: dict[str, str]) -> dict[str, int]:
        """``delete_stale`` for several files (source -> current doc_hash) in one query."""
        removed = dict.fromkeys(versions, 0)
        if not versions or not self._exists():
            return removed
        with self._lock:
            rows = self._other_versions(versions)
            self._delete_rows([r[PRIMARY_FIELD] for r in rows])
        for row in rows:
            removed[row["source"]] += 1
        return removed

    def _other_versions(self, versions: dict[str, str]) -> list[dict]:
        """``pk`` and ``source`` of the rows of these sources whose doc_hash is not the given one."""
        expr = " or ".join(
            f"(source == {quote(source)} and doc_hash != {quote(doc_hash)})"
            for source, doc_hash in versions.items()
        )
        return self.stored.rows(expr, [PRIMARY_FIELD, "source"])

    def changed_sources(self, versions: dict[str, str]) -> dict[str, str]:
        """The entries of ``versions`` (source -> doc_hash) whose source has another version stored."""
        if not versions or not self._exists():
            return {}
        stored = {row["source"] for row in self._other_versions(versions)}
        return {source: doc_hash for source, doc_hash in versions.items() if source in stored}

    def finish_replacing(self) -> None:
        """Finish the replacements killed writers left: their committed new versions lose the old
        ones, and on a Milvus Lite path the uncommitted ones go (``store.replacing``)."""
        if not self._exists():
            return
        try:
            finish_legacy(self)
            finish_committed(self)
            if is_local(self.uri):  # held by this process alone: what is uncommitted is a dead writer's
                roll_back_inserting(self)
        except Exception as exc:  # noqa: BLE001 - a reader without write rights: the read filter holds
            log.warning("collection %r: could not finish an interrupted replace: %s", self.collection, exc)

    def delete_source(self, source: str) -> int:
        """Delete every chunk of ``source``; return how many were removed."""
        if not self._exists():
            return 0
        with self._lock:
            rows = self.stored.rows(f"source == {quote(source)}", [PRIMARY_FIELD])
            self._delete_rows([r[PRIMARY_FIELD] for r in rows])
            FileRecords(self).forget([source])
        return len(rows)

    def delete_ids(self, ids: list[str]) -> int:
        """Delete the chunks with these ids (and what is derived from them); return how many were stored."""
        if not ids or not self._exists():
            return 0
        with self._lock:
            present = sorted(self.existing_ids(list(ids)))
            self._delete_rows(present)
        return len(present)

    def _delete_rows(self, ids: list[str]) -> None:
        """Delete rows by id, after what was derived from them: the RAPTOR tree's copies of
        these chunks, every summary above them and every community report over them go first
        (``rag_graphs.store.derived``), so a failure part-way leaves the chunks, never a summary
        or report of a chunk that is gone. They are swept again once the chunks are gone: a build
        that read the chunks before the delete may have stored a row over them meanwhile (it
        checks after its write that its chunks are still stored; one of the two sees the other)."""
        if not ids:
            return
        forget_derived(self, ids)
        self.stored.delete(ids)
        self.mark_changed()
        forget_derived(self, ids)

    def mark_changed(self) -> None:
        """Invalidate search caches after a write to the collection or to what is derived from it
        (entity rows): this process's generation, and for every process the version marker stored
        with the collection, one store write at a time (``store.writing``). A server refusing
        custom properties is logged, not raised (the data change itself succeeded; caches key on
        the row count then); a marker that collided with other writers' until its retries ran
        out is raised (``StoreWriteError``): caches keyed on it would serve stale results."""
        bump_generation(self.uri, self.collection)
        if not self._exists():  # entity rows written before the first chunks: nothing to mark yet
            return
        properties = {VERSION_PROPERTY: uuid.uuid4().hex}
        try:
            schema_change(
                self.uri,
                f"collection {self.collection!r}'s version marker",
                lambda: self.stored.set_properties(properties),
            )
        except StoreWriteError:
            raise
        except Exception as exc:  # noqa: BLE001 - a server refusing custom properties
            log.warning("collection %r: could not store its version marker: %s", self.collection, exc)

    def fingerprint(self) -> str:
        """The collection's state as any process sees it, which search caches key on: the version
        marker every write rewrites, else (a server refusing custom properties) the row count."""
        try:
            described = self.stored.describe()
        except Exception:  # no such collection (asked only then: one round trip, not two)
            if self._exists():
                raise
            return "absent"
        marker = (described.get("properties") or {}).get(VERSION_PROPERTY)
        return f"v:{marker}" if marker else f"n:{self.count()}"

    def beside(self, collection: str) -> ChunkIndex:
        """Another collection of this store, embedded with this model: a structure derived from it."""
        return open_index(self.uri, collection, self.embeddings, hybrid=self.hybrid)

    def flush(self) -> None:
        """Seal inserted data: search p50 drops from ~125 ms to ~10 ms after a flush."""
        self.stored.flush()


_OPEN: dict[tuple[str, str, int], ChunkIndex] = {}
_OPEN_LOCK = threading.RLock()  # re-entrant: opening one may finish a replace, which opens derived ones


def open_index(uri: str, collection: str, embeddings: Embeddings, *, hybrid: bool = True) -> ChunkIndex:
    """Open (once per process) the collection at ``uri`` with ``embeddings``.

    Milvus Lite allows one client per data directory per process, and opening
    one costs about a second, so graphs, the CLI and the evaluator share it.

    Raises:
        StoreLockedError: another process holds the Milvus Lite path.
    """
    key = (str(Path(uri).expanduser().resolve()) if is_local(uri) else uri, collection, id(embeddings))
    with _OPEN_LOCK:
        if key in _OPEN:  # a search never waits for a write
            return _OPEN[key]
    # opening finishes replaces (a store write): the store's lock first, as a writer holding it
    # takes ``_OPEN_LOCK`` to open a derived collection (``beside``)
    with store_lock(uri), _OPEN_LOCK:
        if key not in _OPEN:
            _OPEN[key] = ChunkIndex(uri=uri, collection=collection, embeddings=embeddings, hybrid=hybrid)
        return _OPEN[key]
