"""One Milvus collection of a store, as rows: the one primitive every read and write of a
collection goes through (``ChunkIndex`` for its chunks, the entity graph for its entity rows, the
access checks of a served index).

It exists so that three things are written once: Milvus's query limit (``QUERY_LIMIT``), the
"iterate and close the iterator" loop (``iterate``), and the filter that hides a file being
replaced on a Milvus server (``visible``, from ``store.replacing``), which every read of a chunk
collection applies by itself: a caller cannot forget it. Writers that must see every stored
version (deduplication, deletes, finishing a replace, the graph build) read through
``ChunkIndex.stored``, the same collection without the filter; readers get ``ChunkIndex.chunks``.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rag_graphs.config.specs import all_of
from rag_graphs.store.fields import PRIMARY_FIELD, SPARSE_FIELD
from rag_graphs.store.filters import ids_filter
from rag_graphs.store.lite import is_local
from rag_graphs.store.replacing import hidden_filter

QUERY_LIMIT = 16_384
"""Rows one Milvus query returns at most (Milvus Lite and server refuse a larger ``limit``)."""
LOOKUP_BATCH = 512
"""Keys per primary-key lookup (``Collection.get``): one filter stays small and fast."""
ITERATE_BATCH = 1000
"""Rows per batch of ``Collection.iterate`` unless the caller asks otherwise."""
INDEX_WAIT = 120.0
"""Seconds ``Collection.index`` waits for Milvus to build a new collection's indexes."""

_LOADED: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
"""Per client, the collections it has loaded (a collection an earlier process created is stored
released, and cannot be searched until loaded); keyed by the client itself, not its ``id()``."""


_TYPES = {"varchar": "VARCHAR", "vector": "FLOAT_VECTOR", "json": "JSON", "int64": "INT64"}
"""A ``Field``'s kind -> its pymilvus ``DataType`` name."""
_SIZES = {"varchar": "max_length", "vector": "dim"}
"""A ``Field``'s kind -> what its ``size`` is to pymilvus."""


@dataclass(frozen=True)
class Field:
    """One field of a collection ``Collection.create`` makes: ``size`` is a ``varchar``'s
    ``max_length`` and a ``vector``'s dimension."""

    name: str
    kind: Literal["varchar", "vector", "json", "int64"]
    size: int | None = None


@dataclass(frozen=True)
class Collection:
    """The collection ``name`` of the store ``client`` (at ``uri``) talks to.

    ``versions``: its rows are versions of files (a chunk collection), so every read passes
    ``visible``; a collection derived from chunks (entity rows, records) has no such rows.
    """

    client: Any
    name: str
    uri: str
    versions: bool = False

    # -- what it is ---------------------------------------------------------------
    def exists(self) -> bool:
        return bool(self.client.has_collection(self.name))

    def describe(self) -> dict[str, Any]:
        """Milvus's description: ``fields``, ``properties``, ``num_rows``, ``update_timestamp``..."""
        return dict(self.client.describe_collection(self.name))

    def properties(self) -> dict[str, Any]:
        return dict(self.describe().get("properties") or {})

    def load(self, *, again: bool = False) -> bool:
        """True when it exists, loaded for searches once per client (``again``: whatever this
        client did before, as a caller that cannot know whether someone released it asks);
        False when it does not exist."""
        if not self.exists():
            return False
        loaded = _LOADED.setdefault(self.client, set())
        if again or self.name not in loaded:
            self.client.load_collection(self.name)
            loaded.add(self.name)
        return True

    def visible(self, expr: str | None) -> str | None:
        """``expr`` and, for a chunk collection on a server, the filter that shows one version of
        each file being replaced (``store.replacing``), read with the collection's properties at
        every read (one round trip). A Milvus Lite path has none to read: its one process
        finished them when it opened it."""
        if not self.versions or is_local(self.uri):
            return expr
        return all_of(expr, hidden_filter(self.properties()))

    # -- reads (each through ``visible``) -----------------------------------------------
    def count(self, where: str | None = None) -> int:
        """Rows matching ``where`` (all when None); 0 when the collection does not exist."""
        if not self.exists():
            return 0
        rows = self.client.query(self.name, filter=self.visible(where) or "", output_fields=["count(*)"])
        return int(rows[0]["count(*)"])

    def rows(self, where: str | None, fields: Sequence[str], *, limit: int | None = None) -> list[dict]:
        """One query: the rows matching ``where``, with ``fields``, in no particular order; at
        most ``limit``, which Milvus caps at ``QUERY_LIMIT`` (None: no limit asked, for a filter
        that bounds its rows itself, such as a list of keys)."""
        return self._query(self.visible(where), fields, limit)

    def get(self, keys: Sequence[str], fields: Sequence[str], *, where: str | None = None) -> dict[str, dict]:
        """Rows by primary key (``LOOKUP_BATCH`` keys a query) that ``where`` admits, key ->
        row in the order Milvus returns them; missing keys are left out."""
        keys = list(dict.fromkeys(keys))
        if not keys:
            return {}
        expr = self.visible(where)  # once for every batch: one round trip on a server
        fields = list(dict.fromkeys([PRIMARY_FIELD, *fields]))
        out: dict[str, dict] = {}
        for i in range(0, len(keys), LOOKUP_BATCH):
            rows = self._query(all_of(ids_filter(keys[i : i + LOOKUP_BATCH]), expr), fields, None)
            out.update((r[PRIMARY_FIELD], r) for r in rows)
        return out

    def iterate(
        self, fields: Sequence[str], *, where: str | None = None, batch_size: int = ITERATE_BATCH
    ) -> Iterator[list[dict]]:
        """Every row matching ``where``, with ``fields``, batch by batch (nothing when the
        collection does not exist); the server-side iterator is closed however the caller stops."""
        if not self.exists():
            return
        iterator = self.client.query_iterator(
            self.name, batch_size=batch_size, filter=self.visible(where) or "", output_fields=list(fields)
        )
        try:
            while batch := iterator.next():
                yield batch
        finally:
            iterator.close()

    def scan(
        self, fields: Sequence[str], *, where: str | None = None, batch_size: int = ITERATE_BATCH
    ) -> Iterator[dict]:
        """``iterate`` row by row."""
        for batch in self.iterate(fields, where=where, batch_size=batch_size):
            yield from batch

    def in_order(self, fields: Sequence[str], *, batch_size: int = QUERY_LIMIT) -> Iterator[list[dict]]:
        """Every row, with ``fields``, in the order Milvus Lite stores them (flushed segments, then
        unflushed rows), which is the order it breaks ties in a search by: pages of one query each,
        by offset (``iterate`` pages by key, so in key order)."""
        if not self.exists():
            return
        expr, size = self.visible(None) or "", min(batch_size, QUERY_LIMIT)
        offset = 0
        while page := self.client.query(
            self.name, filter=expr, output_fields=list(fields), limit=size, offset=offset
        ):
            yield page
            offset += len(page)
            if len(page) < size:
                return

    def search(
        self,
        data: list,
        *,
        field: str,
        params: dict,
        limit: int,
        fields: Sequence[str],
        where: str | None = None,
    ) -> list:
        """Milvus's raw hits, per query, of one ``limit``-deep search of ``field`` (vectors for a
        dense field, texts for a BM25 one) among the rows ``where`` admits."""
        return self.client.search(
            self.name,
            data=data,
            anns_field=field,
            search_params=params,
            limit=limit,
            filter=self.visible(where) or "",
            output_fields=list(fields),
        )

    def hybrid_search(self, requests: list, ranker: Any, *, limit: int, fields: Sequence[str]) -> list:
        """Milvus's raw hits of ``requests`` (pymilvus ``AnnSearchRequest``s, built in ``store``)
        fused by ``ranker``; each request carries its own filter, which its builder passed
        through ``visible``."""
        return self.client.hybrid_search(self.name, requests, ranker, limit=limit, output_fields=list(fields))

    # -- writes ---------------------------------------------------------------------
    def create(self, fields: Sequence[Field], *, key_chars: int, vector_index: dict) -> None:
        """Create it: a string primary key of at most ``key_chars``, ``fields``, dynamic fields
        on, every vector field indexed with ``vector_index``, strong consistency; loaded."""
        from pymilvus import DataType

        schema = self.client.create_schema(auto_id=False, enable_dynamic_field=True)
        schema.add_field(PRIMARY_FIELD, DataType.VARCHAR, is_primary=True, max_length=key_chars)
        for f in fields:
            size = {_SIZES[f.kind]: f.size} if f.kind in _SIZES else {}
            schema.add_field(f.name, getattr(DataType, _TYPES[f.kind]), **size)
        self.client.create_collection(self.name, schema=schema, consistency_level="Strong")
        self.index({f.name: vector_index for f in fields if f.kind == "vector"})
        self.client.load_collection(self.name)
        _LOADED.setdefault(self.client, set()).add(self.name)

    def index(self, indexes: dict[str, dict]) -> None:
        """Index each field of ``indexes`` (field -> ``metric_type``/``index_type``/``params``)
        and return once Milvus says every index is built.

        Not pymilvus's own wait: its ``create_index`` sleeps half a second before it first asks,
        so a new store (four indexes) spent two seconds asleep, though an index of an empty
        collection is built at once. Here the first ask is immediate."""
        params = self.client.prepare_index_params()
        for name, index in indexes.items():
            params.add_index(field_name=name, **index)
        self.client.create_index(self.name, params, sync=False)
        deadline = time.monotonic() + INDEX_WAIT
        for name in indexes:
            while (state := self._index_state(name)) != "Finished":
                if state == "Failed" or time.monotonic() > deadline:
                    raise RuntimeError(f"Milvus could not index {self.name}.{name} ({state})")
                time.sleep(0.05)

    def _index_state(self, field: str) -> str:
        return str(self.client.describe_index(self.name, field).get("state", "Finished"))

    def set_properties(self, properties: dict[str, str]) -> None:
        self.client.alter_collection_properties(self.name, properties=properties)

    def drop_properties(self, keys: Sequence[str]) -> None:
        self.client.drop_collection_properties(self.name, property_keys=list(keys))

    def drop(self) -> None:
        """Drop the collection with its rows, if it exists (a benchmark rebuilding a store)."""
        if self.exists():
            self.client.drop_collection(self.name)

    def insert(self, rows: list[dict]) -> None:
        if rows:
            self.client.insert(self.name, rows)

    def upsert(self, rows: list[dict]) -> None:
        if rows:
            self.client.upsert(self.name, data=rows)

    def upsert_fields(self, rows: list[dict]) -> None:
        """Set some fields of stored rows (each row: ``pk`` plus the fields), the others kept.

        A partial upsert sends only those fields (Milvus >= 2.6, Milvus Lite 3.2). On a server
        without partial updates, whole rows are read back (vectors included, every version) and
        upserted with the new fields; a BM25 sparse vector is a function output, so it is left
        out and Milvus computes it again from the unchanged text.
        """
        if not rows:
            return
        try:
            self.client.upsert(self.name, rows, partial_update=True)
            return
        except Exception as exc:  # no partial updates on this server: whole rows
            if "partial" not in str(exc).lower() and not isinstance(exc, TypeError):
                raise
        changes = {r[PRIMARY_FIELD]: r for r in rows}
        full = self._query(ids_filter(list(changes)), ["*"], None)
        for row in full:
            row.pop(SPARSE_FIELD, None)
            row.update(changes[row[PRIMARY_FIELD]])
        self.client.upsert(self.name, full)

    def delete(self, ids: Sequence[str]) -> None:
        """Delete rows by primary key, ``LOOKUP_BATCH`` at a time."""
        ids = list(ids)
        for i in range(0, len(ids), LOOKUP_BATCH):
            self.client.delete(self.name, ids=ids[i : i + LOOKUP_BATCH])

    def flush(self) -> None:
        """Seal inserted rows (searches after a flush are ~10x faster), when it exists."""
        if self.exists():
            self.client.flush(self.name)

    def _query(self, expr: str | None, fields: Sequence[str], limit: int | None) -> list[dict]:
        extra = {} if limit is None else {"limit": min(limit, QUERY_LIMIT)}
        return list(self.client.query(self.name, filter=expr or "", output_fields=list(fields), **extra))
