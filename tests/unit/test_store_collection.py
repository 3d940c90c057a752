"""The store's one collection primitive (``rag_graphs.store.collection.Collection``): every read
of a chunk collection hides a file's version while it is being replaced on a Milvus server, so
no caller outside ``store`` can forget to (``entity_graph.communities`` and ``serve.access`` read
the chunks themselves and did), and writers read every version through ``ChunkIndex.stored``.

The server is milvus-lite serving a data folder over loopback gRPC (the ``server_uri`` fixture);
a Milvus Lite path needs no filter (its one process finishes replacements when it opens them).
"""

from __future__ import annotations

from langchain_core.documents import Document

from rag_graphs.config.context import RagContext
from rag_graphs.entity_graph.communities import read_chunk_entities
from rag_graphs.serve.access import caller_sources
from rag_graphs.store import ChunkIndex
from rag_graphs.store.collection import QUERY_LIMIT, Collection
from rag_graphs.store.fields import ENTITIES_FIELD
from rag_graphs.store.replacing import Replacement

SOURCE = "/d/harbour.md"


def chunk(cid: str, doc_hash: str, text: str) -> Document:
    meta = {"chunk_id": cid, "source": SOURCE, "doc_hash": doc_hash, "kind": "text", "tenant": "acme"}
    return Document(page_content=text, id=cid, metadata={**meta, ENTITIES_FIELD: ["harbour"]})


def test_every_read_hides_the_version_of_a_file_being_replaced(server_uri: str, fake_embeddings) -> None:
    index = ChunkIndex(uri=server_uri, collection="replaced", embeddings=fake_embeddings)
    index.add([chunk("old-1", "old", "Harbour ships salt."), chunk("old-2", "old", "Its keeper is Ansel.")])
    Replacement(index, {SOURCE: "new"}).begin()  # a writer inserting the new version, not committed
    index.add([chunk("new-1", "new", "Harbour ships basalt."), chunk("new-2", "new", "Its keeper is Brita.")])
    shown, every = {"old-1", "old-2"}, {"old-1", "old-2", "new-1", "new-2"}

    readers, stored = index.chunks, index.stored
    assert readers.count() == 2 and stored.count() == 4
    assert {r["pk"] for r in readers.rows("", ["pk"], limit=10)} == shown
    assert (
        set(readers.get(sorted(every), ["pk"])) == shown and set(stored.get(sorted(every), ["pk"])) == every
    )
    assert {r["pk"] for r in readers.scan(["pk"], batch_size=1)} == shown
    assert {r["pk"] for r in stored.scan(["pk"], batch_size=1)} == every
    # callers outside the store read through it: the chunks they see are the readers'
    assert {c.id for c in read_chunk_entities(index)} == shown
    ctx = RagContext(store_uri=server_uri, collection="replaced", tenant="acme")
    assert caller_sources(index, ctx, [SOURCE], "delete") == {SOURCE: [SOURCE]}
    assert {d.id for d, _ in index.iter_chunks()} == shown and index.sources() == {SOURCE: {"text": 2}}


def test_a_local_path_and_a_derived_collection_read_without_the_filter(index: ChunkIndex) -> None:
    """On a Milvus Lite path and for rows that are no file versions the filter is not read (no
    round trip); a missing collection reads as empty, and a query never asks past Milvus's limit."""
    assert index.chunks.visible("kind == 'text'") == "kind == 'text'"
    missing = Collection(client=None, name="nowhere", uri="http://127.0.0.1:1")
    assert missing.visible("x") == "x"  # not a chunk collection: no properties read
    index.add([chunk("a", "h", "Harbour ships salt.")])
    absent = index.derived(f"{index.collection}_absent")
    assert not absent.exists() and absent.count() == 0 and list(absent.scan(["pk"])) == []
    assert [r["pk"] for r in index.chunks.rows("", ["pk"], limit=QUERY_LIMIT * 4)] == ["a"]


def test_drop_removes_a_collection_and_a_missing_one_is_a_no_op(index: ChunkIndex) -> None:
    """``drop`` (what a benchmark rebuilding a store calls instead of the client's own) removes one
    collection with its rows; a collection that is not there drops as a no-op."""
    index.add([chunk("a", "h", "Harbour ships salt.")])
    index.derived(f"{index.collection}_absent").drop()
    index.stored.drop()
    assert not index.stored.exists() and index.count() == 0
