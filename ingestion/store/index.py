"""The Milvus collection that holds every chunk, and the only code that talks to it.

The URI alone picks the deployment: a local path is Milvus Lite (one process
at a time), ``http://host:19530`` is Milvus standalone/distributed, a Zilliz
URI (with ``MILVUS_TOKEN``) is Zilliz Cloud. Hybrid search (BM25 + dense,
fused by reciprocal rank fusion inside Milvus) is decided when the collection
is created; an existing collection keeps what it was created with.

The index and search parameters below are the ones measured to work on
Milvus Lite 3.2.2 with langchain-milvus 0.4.0 (see DESIGN.md).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from ingestion.quiet import LOCAL_GRPC_OPTIONS, quiet_milvus_lite

log = logging.getLogger(__name__)

SearchMode = Literal["dense", "hybrid"]

TEXT_FIELD = "text"
PRIMARY_FIELD = "pk"
DENSE_FIELD = "dense"
TENANT_FIELD = "tenant"  # access labels set by ingest(tenant=..., tags=...), dynamic fields
TAGS_FIELD = "tags"
SPARSE_FIELD = "sparse"
_DENSE_INDEX = {"index_type": "AUTOINDEX", "metric_type": "COSINE"}
_SPARSE_INDEX = {"index_type": "SPARSE_INVERTED_INDEX", "metric_type": "BM25"}
_DENSE_SEARCH = {"metric_type": "COSINE", "params": {}}
_SPARSE_SEARCH = {"metric_type": "BM25", "params": {}}
_BATCH = 256
RRF_K = 60
"""Hybrid search's default reciprocal rank fusion constant (``RagContext.rrf_k`` passes its own)."""

VERSION_PROPERTY = "rag_graphs.version"
"""Collection property holding a marker rewritten by every add and delete through ``ChunkIndex``:
with the row count it is the collection's ``fingerprint``, which every process sees."""

REPLACING_PROPERTY = "rag_graphs.replacing"
"""Collection property naming the files being replaced (JSON: source -> the new version's
doc_hash) while their new chunks are inserted and their old ones deleted; see ``replacing``."""

_GENERATIONS: dict[tuple[str, str], int] = {}
_GENERATIONS_LOCK = threading.Lock()


def _store_key(uri: str, collection: str) -> tuple[str, str]:
    return (str(Path(uri).expanduser().resolve()) if is_local(uri) else uri, collection)


def generation(uri: str, collection: str) -> int:
    """How many times this process changed (or reopened) the collection: a search cache keys on
    it, so an ingest or delete through any ``ChunkIndex`` on the same store invalidates it."""
    return _GENERATIONS.get(_store_key(uri, collection), 0)


def _changed(uri: str, collection: str) -> None:
    key = _store_key(uri, collection)
    with _GENERATIONS_LOCK:
        _GENERATIONS[key] = _GENERATIONS.get(key, 0) + 1


class StoreLockedError(RuntimeError):
    """Another process holds the Milvus Lite data directory."""


class StoreDamagedError(ValueError):
    """A Milvus Lite data directory's own files are damaged (read as is, it would look emptier)."""


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


def quote(value: str) -> str:
    """Quote ``value`` as a Milvus expression string literal (no expression injection)."""
    escaped = (
        str(value)
        .replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{escaped}"'


def ids_filter(ids: list[str] | tuple[str, ...]) -> str:
    """A Milvus filter expression matching exactly the chunks with these ids."""
    return f"{PRIMARY_FIELD} in [{', '.join(quote(x) for x in ids)}]"


def access_filter(
    *, tenant: str | None = None, tags: Sequence[str] = (), sources: Sequence[str] = ()
) -> str | None:
    """A Milvus expression admitting only the chunks a caller may see (None: no restriction).

    ``tenant`` must match exactly, at least one of ``tags`` must be on the chunk,
    ``source`` must be one of ``sources``. Every value is quoted, so no value
    can change the expression's meaning.
    """
    parts = []
    if tenant is not None:
        parts.append(f"{TENANT_FIELD} == {quote(tenant)}")
    if tags:
        parts.append(f"json_contains_any({TAGS_FIELD}, [{', '.join(quote(t) for t in tags)}])")
    if sources:
        parts.append(f"source in [{', '.join(quote(s) for s in sources)}]")
    return " and ".join(parts) or None


_CLOSING = {")": "(", "]": "["}


def check_filter(expr: str) -> str:
    """``expr`` when it is one self-contained expression, else ``ValueError`` saying why.

    Self-contained: its string literals end and its brackets balance, never closing one
    it did not open. Wrapped in parentheses it is then a single operand that nothing
    after it can be pulled into: ``1==1) or (1==1`` would otherwise turn
    ``(filter) and (tenant == "acme")`` into ``(1==1) or (1==1) and (...)``, and a
    quote left open would swallow the access expression into a string.
    """
    stack: list[str] = []
    quote_char: str | None = None
    escaped = False
    for pos, char in enumerate(expr):
        if quote_char:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote_char:
                quote_char = None
        elif char in "\"'":
            quote_char = char
        elif char in "([":
            stack.append(char)
        elif char in _CLOSING:
            if not stack or stack.pop() != _CLOSING[char]:
                raise ValueError(
                    f"search filter {expr!r}: {char!r} at position {pos} closes nothing it opened "
                    "(a filter must be one balanced expression)"
                )
    if quote_char:
        raise ValueError(f"search filter {expr!r}: a string literal opened with {quote_char} never ends")
    if stack:
        raise ValueError(f"search filter {expr!r}: {stack[-1]!r} is never closed")
    if not expr.strip():
        raise ValueError("search filter is blank (use None for no filter)")
    return expr


def all_of(*exprs: str | None) -> str | None:
    """The conjunction of the given expressions (None when there are none).

    Each is checked to be one self-contained expression (``check_filter``) and
    parenthesised, so no expression can widen another: an operator's filter
    cannot cancel the access labels it is combined with.
    """
    present = [check_filter(e) for e in exprs if e]
    if len(present) <= 1:
        return present[0] if present else None
    return " and ".join(f"({e})" for e in present)


def embed_queries(embeddings: Embeddings, queries: list[str]) -> list[list[float]]:
    """Query vectors, in one model call when the model allows it.

    Asymmetric models embed queries differently from passages (a query prompt
    or instruction), so ``embed_documents`` is not a batched ``embed_query``.
    Sentence-transformers models are encoded in one batch with their query
    settings; other models get one ``embed_query`` call per query.
    """
    try:
        from langchain_huggingface import HuggingFaceEmbeddings
    except ImportError:  # pragma: no cover - core dependency
        HuggingFaceEmbeddings = None  # type: ignore[assignment,misc]
    if (
        len(queries) > 1
        and HuggingFaceEmbeddings is not None
        and isinstance(embeddings, HuggingFaceEmbeddings)
    ):
        return embeddings._embed(queries, embeddings.query_encode_kwargs or embeddings.encode_kwargs)
    return [embeddings.embed_query(q) for q in queries]


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

    Raises:
        ValueError: the path is a file, lies under a file, or is not writable.
    """
    if not is_local(uri):
        return
    path = Path(uri).expanduser()
    hint = "choose another path (--store, RAG_GRAPHS_STORE_URI)"
    if path.exists() and not path.is_dir():
        raise ValueError(f"store path {uri!r} is a regular file, not a Milvus Lite store folder: {hint}")
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        raise ValueError(f"store path {uri!r} lies under {str(existing)!r}, a regular file: {hint}")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"store path {uri!r}: {str(existing)!r} is not writable by this user: {hint}")


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


@dataclass
class ChunkIndex:
    """One Milvus collection of chunks, embedded with one embedding model.

    Chunk ids are strings derived from content and provenance (see
    ``ingestion.convert.chunking``), so adding the same chunk twice stores it once.
    """

    uri: str
    collection: str
    embeddings: Embeddings
    hybrid: bool = True
    _fields: list[str] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        from langchain_milvus import BM25BuiltInFunction, Milvus

        _changed(self.uri, self.collection)  # a new client may see a recreated collection
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
        self.store = Milvus(**kwargs)
        self.client = self.store.client
        self._lock = threading.Lock()
        self.finish_replacing()

    # -- writing -----------------------------------------------------------------
    def existing_ids(self, ids: list[str]) -> set[str]:
        """The subset of ``ids`` already stored."""
        if not ids or not self._exists():
            return set()
        found: set[str] = set()
        for i in range(0, len(ids), _BATCH):
            batch = ids[i : i + _BATCH]
            rows = self.client.query(self.collection, filter=ids_filter(batch), output_fields=[PRIMARY_FIELD])
            found.update(r[PRIMARY_FIELD] for r in rows)
        return found

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
                    self.client.delete(self.collection, ids=inserted)
                raise
            finally:
                if new:
                    self._mark_changed()
        return len(new)

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
        return self.client.query(self.collection, filter=expr, output_fields=[PRIMARY_FIELD, "source"])

    def changed_sources(self, versions: dict[str, str]) -> dict[str, str]:
        """The entries of ``versions`` (source -> doc_hash) whose source has another version stored."""
        if not versions or not self._exists():
            return {}
        stored = {row["source"] for row in self._other_versions(versions)}
        return {source: doc_hash for source, doc_hash in versions.items() if source in stored}

    def replacing(self, versions: dict[str, str]) -> None:
        """Record (``versions``: source -> new doc_hash) or clear (``{}``) the files being replaced.

        A new version is inserted before the old one is deleted (a failed insert loses
        nothing stored). A process killed between the two would leave both versions
        searchable; the record lets the next process that opens the collection finish the
        replacement (``finish_replacing``) before it searches.
        """
        if not self._exists():
            return
        value = json.dumps(versions, sort_keys=True) if versions else ""
        self.client.alter_collection_properties(self.collection, properties={REPLACING_PROPERTY: value})

    def finish_replacing(self) -> None:
        """Finish a replacement a killed process left recorded: a file whose new version is
        stored loses its other versions; one whose new version never landed keeps the old."""
        if not self._exists():
            return
        properties = self.client.describe_collection(self.collection).get("properties") or {}
        recorded = properties.get(REPLACING_PROPERTY) or ""
        if not recorded:
            return
        try:
            versions = json.loads(recorded)
        except json.JSONDecodeError:
            versions = {}
        landed = {
            source: doc_hash
            for source, doc_hash in dict(versions).items()
            if self.client.query(
                self.collection,
                filter=f"source == {quote(source)} and doc_hash == {quote(doc_hash)}",
                output_fields=[PRIMARY_FIELD],
                limit=1,
            )
        }
        removed = self.delete_stale_many(landed)
        log.warning(
            "collection %r: finished replacing %d file(s) an interrupted ingest left half-done "
            "(%d old chunks removed)",
            self.collection,
            len(landed),
            sum(removed.values()),
        )
        self.replacing({})

    def delete_source(self, source: str) -> int:
        """Delete every chunk of ``source``; return how many were removed."""
        if not self._exists():
            return 0
        with self._lock:
            rows = self.client.query(
                self.collection, filter=f"source == {quote(source)}", output_fields=[PRIMARY_FIELD]
            )
            self._delete_rows([r[PRIMARY_FIELD] for r in rows])
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
        these chunks and every summary above them go first (``ingestion.raptor.forget_chunks``),
        so a failure part-way leaves the chunks, never a summary of a chunk that is gone."""
        if not ids:
            return
        from ingestion.raptor import forget_in_tree  # builds on this module: imported when used

        forget_in_tree(self, ids)
        self.client.delete(self.collection, ids=ids)
        self._mark_changed()

    def _mark_changed(self) -> None:
        """Invalidate search caches: this process's generation, and for every process the
        version marker stored with the collection (a failed marker write is logged, not raised:
        the data change itself succeeded)."""
        _changed(self.uri, self.collection)
        try:
            self.client.alter_collection_properties(
                self.collection, properties={VERSION_PROPERTY: uuid.uuid4().hex}
            )
        except Exception as exc:  # noqa: BLE001 - a server refusing custom properties
            log.warning("collection %r: could not store its version marker: %s", self.collection, exc)

    def fingerprint(self) -> str:
        """What the collection's content is now, as any process sees it: the row count and the
        version marker every add and delete rewrites (``absent`` when there is no collection).
        A persistent search cache keys on it; the per-process ``generation`` cannot see
        another process's ingest."""
        if not self._exists():
            return "absent"
        properties = self.client.describe_collection(self.collection).get("properties") or {}
        return f"{self.count()}:{properties.get(VERSION_PROPERTY, '')}"

    def flush(self) -> None:
        """Seal inserted data: search p50 drops from ~125 ms to ~10 ms after a flush."""
        if self._exists():
            self.client.flush(self.collection)

    # -- reading -----------------------------------------------------------------
    def search(
        self,
        query: str,
        k: int = 4,
        mode: SearchMode = "hybrid",
        expr: str | None = None,
        rrf_k: int = RRF_K,
    ) -> list[tuple[Document, float]]:
        """Top-``k`` chunks for ``query`` with scores (higher is better).

        ``hybrid`` fuses BM25 and dense results inside Milvus by reciprocal rank
        fusion, each chunk scoring the sum of ``1 / (rrf_k + rank)`` over the two
        rankings; on a dense-only collection it falls back to ``dense`` (cosine
        scores; ``rrf_k`` unused). One query and a batch take the same path, so they rank alike.
        """
        return self.search_many([query], k=k, mode=mode, expr=expr, rrf_k=rrf_k)[0]

    def search_many(
        self,
        queries: list[str],
        k: int = 4,
        mode: SearchMode = "hybrid",
        expr: str | None = None,
        rrf_k: int = RRF_K,
    ) -> list[list[tuple[Document, float]]]:
        """``search`` for several queries in one batch: one embedding call, one Milvus request.

        Fan-out methods (multi-query, RAG-Fusion, decomposition) search N
        queries; batching keeps that close to the cost of one search.
        """
        if not queries or not self._exists():
            return [[] for _ in queries]
        from pymilvus import AnnSearchRequest, RRFRanker

        vectors = embed_queries(self.embeddings, queries)
        if mode == "hybrid" and self.hybrid:
            requests = [
                AnnSearchRequest(
                    data=vectors, anns_field=DENSE_FIELD, param=_DENSE_SEARCH, limit=k, expr=expr
                ),
                AnnSearchRequest(
                    data=queries, anns_field=SPARSE_FIELD, param=_SPARSE_SEARCH, limit=k, expr=expr
                ),
            ]
            results = self.client.hybrid_search(
                self.collection, requests, RRFRanker(rrf_k), limit=k, output_fields=self._result_fields()
            )
        else:
            results = self.client.search(
                self.collection,
                data=vectors,
                anns_field=DENSE_FIELD,
                search_params=_DENSE_SEARCH,
                limit=k,
                filter=expr or "",
                output_fields=self._result_fields(),
            )
        return [[(self._to_document(h["entity"]), float(h["distance"])) for h in hits] for hits in results]

    def get(self, ids: list[str]) -> list[Document]:
        """Stored chunks by id, in the order asked (missing ids are left out)."""
        if not ids or not self._exists():
            return []
        rows = self.client.query(self.collection, filter=ids_filter(ids), output_fields=self._result_fields())
        by_id = {r[PRIMARY_FIELD]: self._to_document(r) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def where(self, expr: str, *, limit: int = 100) -> list[Document]:
        """Stored chunks matching a Milvus filter (at most ``limit``), in no particular order."""
        if not self._exists():
            return []
        rows = self.client.query(
            self.collection, filter=expr, output_fields=self._result_fields(), limit=limit
        )
        return [self._to_document(r) for r in rows]

    def vectors(self, ids: list[str]) -> dict[str, list[float]]:
        """Stored dense vectors by chunk id (rerankers reuse them instead of embedding again)."""
        if not ids or not self._exists():
            return {}
        rows = self.client.query(self.collection, filter=ids_filter(ids), output_fields=[DENSE_FIELD])
        return {r[PRIMARY_FIELD]: list(r[DENSE_FIELD]) for r in rows}

    def iter_chunks(self, *, batch_size: int = 1000) -> list[tuple[Document, list[float]]]:
        """Every stored chunk with its dense vector (for building over a whole collection)."""
        if not self._exists():
            return []
        out: list[tuple[Document, list[float]]] = []
        iterator = self.client.query_iterator(
            self.collection, batch_size=batch_size, filter="", output_fields=["*"]
        )
        try:
            while batch := iterator.next():
                out.extend((self._to_document(row), list(row[DENSE_FIELD])) for row in batch)
        finally:
            iterator.close()
        return out

    def sources(self, *, batch_size: int = 1000) -> dict[str, dict[str, int]]:
        """Chunk counts per kind for every indexed source: ``{source: {"text": 12, "table": 2}}``."""
        if not self._exists():
            return {}
        out: dict[str, dict[str, int]] = {}
        iterator = self.client.query_iterator(
            self.collection, batch_size=batch_size, filter="", output_fields=["source", "kind"]
        )
        try:
            while batch := iterator.next():
                for row in batch:
                    kinds = out.setdefault(str(row.get("source")), {})
                    kind = str(row.get("kind") or "text")
                    kinds[kind] = kinds.get(kind, 0) + 1
        finally:
            iterator.close()
        return dict(sorted(out.items()))

    def count(self) -> int:
        """Number of stored chunks."""
        if not self._exists():
            return 0
        rows = self.client.query(self.collection, filter="", output_fields=["count(*)"])
        return int(rows[0]["count(*)"])

    def _exists(self) -> bool:
        return self.client.has_collection(self.collection)

    def _result_fields(self) -> list[str]:
        """Fields a search or lookup returns: everything stored but the vectors.

        ``["*"]`` ships each hit's dense and sparse vectors back, which nothing
        reads: leaving them out cuts a 5-query hybrid search from ~7.1 to ~5.8 ms.
        Read from the schema once (a collection keeps its fields).
        """
        if self._fields is None:
            info = self.client.describe_collection(self.collection)
            names = [f["name"] for f in info["fields"] if not f["type"].name.endswith("VECTOR")]
            self._fields = names + (["$meta"] if info.get("enable_dynamic_field") else [])
        return self._fields

    @staticmethod
    def _to_document(row: dict) -> Document:
        meta = {k: v for k, v in row.items() if k not in (TEXT_FIELD, DENSE_FIELD, SPARSE_FIELD)}
        meta.pop(PRIMARY_FIELD, None)
        return Document(page_content=row.get(TEXT_FIELD, ""), metadata=meta, id=row.get(PRIMARY_FIELD))


_OPEN: dict[tuple[str, str, int], ChunkIndex] = {}
_OPEN_LOCK = threading.Lock()


def open_index(uri: str, collection: str, embeddings: Embeddings, *, hybrid: bool = True) -> ChunkIndex:
    """Open (once per process) the collection at ``uri`` with ``embeddings``.

    Milvus Lite allows one client per data directory per process, and opening
    one costs about a second, so graphs, the CLI and the evaluator share it.

    Raises:
        StoreLockedError: another process holds the Milvus Lite path.
    """
    key = (str(Path(uri).expanduser().resolve()) if is_local(uri) else uri, collection, id(embeddings))
    with _OPEN_LOCK:
        if key not in _OPEN:
            _OPEN[key] = ChunkIndex(uri=uri, collection=collection, embeddings=embeddings, hybrid=hybrid)
        return _OPEN[key]
