"""The entity rows of a chunk collection: their collection ``<collection>_entities``, its fields,
reads by key (``rag_graphs.entity_graph.build`` fills them; the walk reads them), all through
``store.collection.Collection``.
"""

from __future__ import annotations

from rag_graphs.config.errors import SetupError
from rag_graphs.store.collection import Collection, Field
from rag_graphs.store.fields import _DENSE_INDEX, DENSE_FIELD
from rag_graphs.store.index import ChunkIndex

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


def entity_rows(index: ChunkIndex, keys: list[str], fields: list[str]) -> dict[str, dict]:
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
