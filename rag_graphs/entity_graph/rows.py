"""The entity rows of a chunk collection: their collection ``<collection>_entities``, its fields,
reads by key (``rag_graphs.entity_graph.build`` fills them; the walk reads them), all through
``store.collection.Collection``; and graph search's reads by key through one cache per store
state (``GraphRows``).

Why the cache: a graph search reads hundreds of rows by key (the question's name n-grams, the
neighbourhood's chunks and their entities), ~0.1 ms a row in Milvus Lite, which made the
neighbourhood the longest lap; across questions on one store most of those rows recur (72% of
the entity reads and 85% of the chunk reads of 200 HotpotQA questions had been read by an earlier
question). ``graph_rows`` reads the store's state (``graph_state``: exactly what the search cache
keys graph rankings on, so every write, delete, relabel and graph build by any process changes
it) and hands out the reads through that state's cache; a new state starts an empty one.
Entity rows are no file's rows and no filter ever applied to them. Chunk rows are served from the
cache only to a read without a filter (none given and none that ``Collection.visible`` adds): a
filtered read goes to the store, so the caller's filter alone decides which chunks are seen.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from rag_graphs.config.errors import SetupError
from rag_graphs.store.collection import Collection, Field
from rag_graphs.store.fields import _DENSE_INDEX, DENSE_FIELD, ENTITIES_FIELD, PRIMARY_FIELD
from rag_graphs.store.index import ChunkIndex
from rag_graphs.store.mirror import ChunkMirror

NAME_FIELD = "name"
CHUNKS_FIELD = "chunks"
COUNT_FIELD = "n"
MAX_POSTINGS = 1000
"""Chunk ids kept per entity. An entity in more chunks is a hub: its specificity
(1 / chunks) is ~0 and search does not expand through it."""
_KEY_CHARS = 512


def entity_collection(collection: str) -> str:
    """The collection that holds ``collection``'s entities."""
    return f"{collection}_entities"


def entity_table(index: ChunkIndex) -> Collection:
    """``index``'s entity rows, read and written through the store's one collection primitive."""
    return index.derived(entity_collection(index.collection))


def has_graph(index: ChunkIndex) -> bool:
    """True when the collection has an entity collection (``build_graph`` ran, or ingest made it).

    Loads the entity collection the first time (a collection created by an
    earlier process is stored released, and cannot be searched until loaded).
    """
    return entity_table(index).load()


def _dimension(index: ChunkIndex) -> int:
    if index.stored.exists():
        for f in index.stored.describe()["fields"]:
            if f["name"] == DENSE_FIELD:
                return int(f["params"]["dim"])
    return len(index.embeddings.embed_query("dimension probe"))


def ensure_entity_collection(index: ChunkIndex) -> str:
    """Create the entity collection if missing; return its name."""
    table = entity_table(index)
    if has_graph(index):
        return table.name
    fields = [
        Field(NAME_FIELD, "varchar", 1024),
        Field(DENSE_FIELD, "vector", _dimension(index)),
        Field(CHUNKS_FIELD, "json"),
        Field(COUNT_FIELD, "int64"),
    ]
    table.create(fields, key_chars=_KEY_CHARS, vector_index=_DENSE_INDEX)
    index.mark_changed()  # search_mode="auto" plans resolve again (graph search now), caches miss
    return table.name


def entity_rows(index: ChunkIndex, keys: Sequence[str], fields: Sequence[str]) -> dict[str, dict]:
    """Entity rows by key (primary-key lookups in batches); missing keys are left out."""
    return entity_table(index).get(keys, fields)


def check_graph(index: ChunkIndex) -> None:
    """Refuse graph search on a collection without its entity graph (it used to fall back to
    hybrid search silently, so ``hipporag`` was naive RAG without saying so).

    Raises:
        SetupError: the collection has no entity collection.
    """
    if not has_graph(index):
        raise SetupError(
            f"search_mode='graph' (the hipporag method, RagContext.search_mode, RAG_GRAPHS_SEARCH_MODE): "
            f"collection {index.collection!r} has no entity graph (no collection "
            f"{entity_collection(index.collection)!r}); build it with `rag-graphs graph build "
            f"--collection {index.collection}`, or use search_mode='hybrid' and another method"
        )


def graph_state(index: ChunkIndex) -> Hashable:
    """The state graph search's rankings and reads depend on, read now: the chunks' fingerprint
    (the version marker every write of any process rewrites, else the row count) and, since entity
    rows change in place (a build, a prune), the entity collection's row count and update time
    where the store reports them. The search cache (``GraphSearcher.state``) and ``graph_rows``
    key on it."""
    entities = entity_table(index).describe()
    return (index.fingerprint(), entities.get("num_rows"), entities.get("update_timestamp"))


ENTITY_ROW_FIELDS = (NAME_FIELD, CHUNKS_FIELD, COUNT_FIELD)
"""What the cache keeps of an entity row (whatever a search asks of one is among them)."""
CHUNK_ROW_FIELDS = (ENTITIES_FIELD, "title", "headings")
"""What the cache keeps of a chunk row: what the walk needs (its entities, what it is about)."""
MAX_CACHED_ROWS = 250_000
"""Rows one state's cache keeps per kind (the oldest go first). A whole store's rows take ~26 MB
per 10,000 passages (HotpotQA's 9,809 passages and 64,232 entities: 26 MB; BENCHMARKS.md, "Graph
search latency, round 2"), so a store up to ~40,000 passages is held whole, in ~100 MB at most."""
CACHED_STORES = 4
"""Collections whose row caches a process keeps (the least recently searched go first)."""


@dataclass
class RowCache:
    """One store state's rows by key, packed (``_packed``: its kept fields' values in their order,
    lists as tuples of interned strings, so a chunk id listed by many entities is held once), or
    None for a key the store did not have."""

    state: Hashable
    entities: dict[str, tuple | None] = field(default_factory=dict)
    chunks: dict[str, tuple | None] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, kind: dict[str, tuple | None], rows: dict[str, tuple | None]) -> None:
        with self.lock:
            kind.update(rows)
            while len(kind) > MAX_CACHED_ROWS:
                del kind[next(iter(kind))]


_CACHES: OrderedDict[tuple[str, str], RowCache] = OrderedDict()
_CACHES_LOCK = threading.Lock()
_UNREAD = object()
_ABSENT = object()  # a field the stored row lacks (a dynamic field it was stored without)


def _packed(row: dict | None, kept: Sequence[str]) -> tuple | None:
    """A stored row as the cache holds it: ``kept``'s values in order (``_ABSENT`` where it lacks
    one), a list as a tuple, its strings interned."""
    if row is None:
        return None
    return tuple(_frozen(row[name]) if name in row else _ABSENT for name in kept)


def _frozen(value):
    if not isinstance(value, list):
        return value
    return tuple(sys.intern(v) if type(v) is str else v for v in value)


def _project(key: str, packed: tuple, kept: Sequence[str], fields: Sequence[str]) -> dict:
    """The row as a read of ``fields`` returns it (its key first), each list a new one: a caller
    that edits it cannot change the cache."""
    out: dict = {PRIMARY_FIELD: key}
    for name in fields:
        if name in kept and (value := packed[kept.index(name)]) is not _ABSENT:
            out[name] = list(value) if isinstance(value, tuple) else value
    return out


def _copied(row: dict, fields: Sequence[str]) -> dict:
    """A copy's stored row as a read of ``fields`` returns it (its key first, each list a new one)."""
    out: dict = {PRIMARY_FIELD: row[PRIMARY_FIELD]}
    for name in fields:
        if name in row:
            value = row[name]
            out[name] = list(value) if isinstance(value, list) else value
    return out


def _in_order(rows: dict[str, dict], keys: Sequence[str]) -> dict[str, dict]:
    """``rows`` in the order of ``keys`` (Milvus Lite returns a read by key so; a server may not)."""
    return {key: rows[key] for key in dict.fromkeys(keys) if key in rows}


class GraphRows:
    """The rows one graph search reads by key, in the order asked (missing keys left out), through
    ``cache`` (None: straight from the store, as every read was before the cache)."""

    def __init__(
        self, index: ChunkIndex, cache: RowCache | None = None, mirror: ChunkMirror | None = None
    ) -> None:
        self.index = index
        self.cache = cache
        self.mirror = mirror
        """The store state's in-process copy of the chunks (``store.mirror``), when the search has
        one: an unfiltered chunk read is answered from it, no cache miss asks the store."""
        self.entity_copy: dict[str, tuple] | None = None
        """The store state's in-process copy of every entity row (``entity_copy``), when the search
        has one: an entity read is answered from it, a key it lacks is a key the store lacks."""
        self._unfiltered: bool | None = None  # the store hides nothing from an unfiltered read

    def entities(self, keys: Sequence[str], fields: Sequence[str]) -> dict[str, dict]:
        """Entity rows by key with ``fields`` (``entity_rows``)."""
        keys = list(dict.fromkeys(keys))
        kept = set(fields) - {PRIMARY_FIELD} <= set(ENTITY_ROW_FIELDS)
        if self.entity_copy is not None and kept:
            held = self.entity_copy
            return {
                key: _project(key, row, ENTITY_ROW_FIELDS, fields)
                for key in keys
                if (row := held.get(key)) is not None
            }
        if self.cache is None or not kept:
            return _in_order(entity_rows(self.index, keys, fields), keys)
        read = lambda missing: entity_rows(self.index, missing, ENTITY_ROW_FIELDS)  # noqa: E731
        return self._through(self.cache.entities, ENTITY_ROW_FIELDS, keys, fields, read)

    def chunks(self, ids: Sequence[str], fields: Sequence[str], expr: str | None) -> dict[str, dict]:
        """Chunk rows by id with ``fields`` that pass ``expr`` (deleted or hidden ones left out);
        from the cache only without a filter."""
        ids = list(dict.fromkeys(ids))
        if self.mirror is not None and expr is None and DENSE_FIELD not in fields and self.unfiltered():
            return {cid: _copied(row, fields) for cid, row in self.mirror.stored_rows(ids).items()}
        cached = set(fields) - {PRIMARY_FIELD} <= set(CHUNK_ROW_FIELDS)
        if self.cache is None or expr is not None or not cached or not self.unfiltered():
            return _in_order(self.index.chunks.get(ids, fields, where=expr), ids)
        read = lambda missing: self.index.chunks.get(missing, CHUNK_ROW_FIELDS)  # noqa: E731
        return self._through(self.cache.chunks, CHUNK_ROW_FIELDS, ids, fields, read)

    def unfiltered(self) -> bool:
        """True when a read without a filter sees every stored chunk (on a server, no file is
        being replaced: ``Collection.visible``); asked once per search."""
        if self._unfiltered is None:
            self._unfiltered = self.index.chunks.visible(None) is None
        return self._unfiltered

    def _through(
        self, kind: dict, kept: Sequence[str], keys: list[str], fields: Sequence[str], read
    ) -> dict[str, dict]:
        """``keys``' rows with ``fields`` from ``kind`` (one of the cache's), the missing ones
        read (with every ``kept`` field) and added to it."""
        known = {key: kind.get(key, _UNREAD) for key in keys}
        missing = [key for key, row in known.items() if row is _UNREAD]
        if missing:
            stored = read(missing)
            fresh = {key: _packed(stored.get(key), kept) for key in missing}
            assert self.cache is not None
            self.cache.add(kind, fresh)
            known.update(fresh)
        return {key: _project(key, row, kept, fields) for key, row in known.items() if row is not None}


def graph_rows(index: ChunkIndex, state: Hashable | None = None) -> GraphRows:
    """One graph search's reads by key, through the cache of the store's state now
    (``graph_state``; a state other than the cached one starts an empty cache). ``state``: the
    ``graph_state`` its caller read just before (the search cache, for its key: a ranking is
    cached under the state its rows were read under, and the store is not asked twice, two
    round trips); None reads it."""
    state = graph_state(index) if state is None else state
    where = (index.uri, index.collection)
    with _CACHES_LOCK:
        cache = _CACHES.get(where)
        if cache is None or cache.state != state:
            cache = _CACHES[where] = RowCache(state)
        _CACHES.move_to_end(where)
        while len(_CACHES) > CACHED_STORES:
            _CACHES.popitem(last=False)
    return GraphRows(index, cache)
