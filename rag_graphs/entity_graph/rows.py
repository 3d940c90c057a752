"""The entity rows of a chunk collection: their collection ``<collection>_entities``, its fields,
reads by key and partial writes (``rag_graphs.entity_graph.build`` fills them; the walk reads them).
"""

from __future__ import annotations

from rag_graphs.config.errors import SetupError
from rag_graphs.store.fields import DENSE_FIELD, PRIMARY_FIELD, SPARSE_FIELD
from rag_graphs.store.filters import quote
from rag_graphs.store.index import ChunkIndex

NAME_FIELD = "name"
CHUNKS_FIELD = "chunks"
COUNT_FIELD = "n"
MAX_POSTINGS = 1000
"""Chunk ids kept per entity. An entity in more chunks is a hub: its specificity
(1 / chunks) is ~0 and search does not expand through it."""
_DENSE_INDEX = {"index_type": "AUTOINDEX", "metric_type": "COSINE"}
_KEY_CHARS = 512
LOOKUP_BATCH = 512
_LOADED: set[tuple[int, str]] = set()


def entity_collection(collection: str) -> str:
    """The collection that holds ``collection``'s entities."""
    return f"{collection}_entities"


def has_graph(index: ChunkIndex) -> bool:
    """True when the collection has an entity collection (``build_graph`` ran, or ingest made it).

    Loads the entity collection the first time (a collection created by an
    earlier process is stored released, and cannot be searched until loaded).
    """
    name = entity_collection(index.collection)
    if not index.client.has_collection(name):
        return False
    key = (id(index.client), name)
    if key not in _LOADED:
        index.client.load_collection(name)
        _LOADED.add(key)
    return True


def in_filter(values: list[str], field_name: str = PRIMARY_FIELD) -> str:
    """Milvus expression: ``field_name`` is one of ``values`` (each quoted)."""
    return f"{field_name} in [{', '.join(quote(v) for v in values)}]"


def _dimension(index: ChunkIndex) -> int:
    if index.client.has_collection(index.collection):
        for f in index.client.describe_collection(index.collection)["fields"]:
            if f["name"] == DENSE_FIELD:
                return int(f["params"]["dim"])
    return len(index.embeddings.embed_query("dimension probe"))


def ensure_entity_collection(index: ChunkIndex) -> str:
    """Create the entity collection if missing; return its name."""
    from pymilvus import DataType

    name = entity_collection(index.collection)
    client = index.client
    if has_graph(index):
        return name
    schema = client.create_schema(auto_id=False, enable_dynamic_field=True)
    schema.add_field(PRIMARY_FIELD, DataType.VARCHAR, is_primary=True, max_length=_KEY_CHARS)
    schema.add_field(NAME_FIELD, DataType.VARCHAR, max_length=1024)
    schema.add_field(DENSE_FIELD, DataType.FLOAT_VECTOR, dim=_dimension(index))
    schema.add_field(CHUNKS_FIELD, DataType.JSON)
    schema.add_field(COUNT_FIELD, DataType.INT64)
    params = client.prepare_index_params()
    params.add_index(field_name=DENSE_FIELD, **_DENSE_INDEX)
    client.create_collection(name, schema=schema, index_params=params, consistency_level="Strong")
    _LOADED.add((id(client), name))
    index.mark_changed()  # search_mode="auto" plans resolve again (graph search now), caches miss
    return name


def entity_rows(index: ChunkIndex, keys: list[str], fields: list[str]) -> dict[str, dict]:
    """Entity rows by key (primary-key lookups in batches); missing keys are left out."""
    name = entity_collection(index.collection)
    out: dict[str, dict] = {}
    keys = list(dict.fromkeys(keys))
    for i in range(0, len(keys), LOOKUP_BATCH):
        rows = index.client.query(
            name, filter=in_filter(keys[i : i + LOOKUP_BATCH]), output_fields=[PRIMARY_FIELD, *fields]
        )
        out.update((r[PRIMARY_FIELD], r) for r in rows)
    return out


def upsert_fields(index: ChunkIndex, collection: str, rows: list[dict]) -> None:
    """Set some fields of stored rows (each row: ``pk`` plus the fields), the others kept.

    A partial upsert sends only those fields (Milvus >= 2.6, Milvus Lite 3.2).
    On a server without partial updates, whole rows are read back (vectors
    included) and upserted with the new fields; a BM25 sparse vector is a
    function output, so it is left out and Milvus computes it again from the
    unchanged text.
    """
    if not rows:
        return
    client = index.client
    try:
        client.upsert(collection, rows, partial_update=True)
        return
    except Exception as exc:  # no partial updates on this server: whole rows
        if "partial" not in str(exc).lower() and not isinstance(exc, TypeError):
            raise
    changes = {r[PRIMARY_FIELD]: r for r in rows}
    full = client.query(collection, filter=in_filter(list(changes)), output_fields=["*"])
    for row in full:
        row.pop(SPARSE_FIELD, None)
        row.update(changes[row[PRIMARY_FIELD]])
    client.upsert(collection, full)


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
