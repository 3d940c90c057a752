"""Setup mistakes refused before they cost a run, each in one line naming the setting and the fix.

A store path that does not exist, a collection never ingested, a graph search on a
collection without an entity graph, an embedding model of another dimension than the
collection's: each used to run on, search nothing (or quietly
fall back to hybrid search) and end ``no_evidence`` with exit status 0, as if the
corpus did not hold the answer. These checks (with ``entity_graph.rows.check_graph`` and
``llm.models.check_chat_model``) turn them into a ``SetupError`` at the first search, before any
model call that search would feed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rag_graphs.config.errors import SetupError
from rag_graphs.store.embeddings import embeddings_identity
from rag_graphs.store.fields import DENSE_FIELD

if TYPE_CHECKING:
    from rag_graphs.store.index import ChunkIndex


def check_store_exists(uri: str, collection: str) -> None:
    """Refuse reading a local Milvus Lite store that does not exist (before opening it, which
    would create an empty one).

    Raises:
        SetupError: the local path holds no store.
    """
    if "://" not in uri and not Path(uri).expanduser().is_dir():  # a Milvus Lite path
        raise SetupError(
            f"store {uri!r} (RagContext.store_uri, RAG_GRAPHS_STORE_URI, --store) does not exist: "
            f"ingest into it first (`rag-graphs ingest PATH --store {uri}`) or point at an existing store"
        )


def check_collection_exists(index: ChunkIndex) -> None:
    """Refuse reading a collection the store does not hold.

    Raises:
        SetupError: no such collection (the message lists the ones there are).
    """
    if index.stored.exists():
        return
    held = sorted(
        name
        for name in index.client.list_collections()
        if not name.endswith(("_entities", "_raptor", "_sentences", "_files"))
    )
    there = f"it holds {', '.join(map(repr, held))}" if held else "it holds no collection"
    raise SetupError(
        f"collection {index.collection!r} (RagContext.collection, RAG_GRAPHS_COLLECTION, --collection) "
        f"is not in store {index.uri!r} ({there}): ingest into it first, or name an existing one"
    )


def check_dimension(index: ChunkIndex) -> None:
    """Refuse an embedding model that is not the collection's: another model than the one the
    collection was created with (its name is stored with it; collections from before that
    have none), or vectors of another dimension (it used to end in a faiss ``AssertionError``
    or an opaque Milvus error mid-run). One check per index and model: the index keeps the model
    it accepted (a process-wide set of ``id()`` pairs once skipped the check for a new index at a
    freed one's address).

    Raises:
        SetupError: the model differs from the collection's, by name or by dimension.
    """
    if index.checked_model is index.embeddings:
        return
    fields = index.stored.describe()["fields"]
    stored = next((f.get("params", {}).get("dim") for f in fields if f["name"] == DENSE_FIELD), None)
    given = len(index.embeddings.embed_query("dimension probe"))
    if stored is not None and int(stored) != given:
        raise SetupError(
            f"embedding model gives {given}-d vectors but collection {index.collection!r} was built "
            f"with {stored}-d ones: set the model it was ingested with (RagContext.embeddings, "
            "RAG_GRAPHS_EMBEDDINGS, --embeddings), or ingest into a new collection with this one"
        )
    built, given_name = index.embeddings_name(), embeddings_identity(index.embeddings)
    if built is not None and built != given_name:
        raise SetupError(
            f"collection {index.collection!r} was built with embeddings {built!r} but this run uses "
            f"{given_name!r} (RagContext.embeddings, RAG_GRAPHS_EMBEDDINGS, --embeddings): set it to "
            f"{built!r}, or ingest into a new collection with this model"
        )
    index.checked_model = index.embeddings
