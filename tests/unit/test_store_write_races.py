"""Concurrent writes to one Milvus Lite store (issue 50, item 13): Milvus Lite rewrites a
collection's ``schema.json`` through one fixed ``schema.json.tmp``, so two schema changes at once
(the version marker every write moves) collided: writes failed with a raw ``MilvusException``
and markers were lost. Every write of a process to one store now holds the store's lock, and a
collision with another client is retried, then one line."""

from __future__ import annotations

import logging
import threading

import pymilvus
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from pymilvus.exceptions import MilvusException

from rag_graphs.store import ChunkIndex
from rag_graphs.store.fields import VERSION_PROPERTY
from rag_graphs.store.index import open_index
from rag_graphs.store.writing import ATTEMPTS, StoreWriteError, schema_change

THREADS = 6
WRITES = 4
COLLISION = (
    "[Errno 2] No such file or directory: '/s/m.db/collections/t/schema.json.tmp' -> "
    "'/s/m.db/collections/t/schema.json'"
)
"""Milvus Lite's message when a schema write's temporary file was renamed under it."""


def _chunk(cid: str) -> Document:
    return Document(page_content=f"Text {cid}.", metadata={"chunk_id": cid, "source": f"{cid}.md"})


def test_concurrent_writes_all_land_and_each_moves_the_version_marker(store_uri, monkeypatch, caplog):
    """Threads adding and deleting at once through their own ``ChunkIndex`` of one collection (as
    served runs with their own embedding objects have): no exception, no lost marker; the marker
    stored is the last one written."""
    ChunkIndex(uri=store_uri, collection="test", embeddings=DeterministicFakeEmbedding(size=32)).add(
        [_chunk("seed")]
    )
    markers: list[str] = []
    alter = pymilvus.MilvusClient.alter_collection_properties

    def recorded(self, collection_name, properties, **kwargs):
        out = alter(self, collection_name, properties, **kwargs)
        if VERSION_PROPERTY in properties:
            markers.append(properties[VERSION_PROPERTY])
        return out

    monkeypatch.setattr(pymilvus.MilvusClient, "alter_collection_properties", recorded)
    indexes = [open_index(store_uri, "test", DeterministicFakeEmbedding(size=32)) for _ in range(THREADS)]
    assert len({id(i) for i in indexes}) == THREADS
    start, failures = threading.Barrier(THREADS), []

    def write(n: int) -> None:
        start.wait()
        try:
            for w in range(WRITES):
                assert indexes[n].add([_chunk(f"c{n}-{w}")]) == 1
            assert indexes[n].delete_ids([f"c{n}-0"]) == 1
        except Exception as exc:  # noqa: BLE001 - collected, asserted below
            failures.append(exc)

    with caplog.at_level(logging.WARNING, logger="rag_graphs"):
        threads = [threading.Thread(target=write, args=(n,)) for n in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []
    assert not [r for r in caplog.records if "version marker" in r.getMessage()]
    assert len(markers) == THREADS * (WRITES + 1)  # one per add, one per delete: none lost
    assert indexes[0].fingerprint() == f"v:{markers[-1]}"
    assert indexes[0].count() == 1 + THREADS * (WRITES - 1)


def test_a_collision_with_another_client_is_tried_again():
    calls = []

    def change() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise MilvusException(message=COLLISION)
        return "written"

    assert schema_change("/s/m.db", "the marker", change) == "written" and len(calls) == 3


def test_a_collision_that_lasts_is_one_line_naming_the_store_and_the_change():
    calls = []

    def change() -> None:
        calls.append(1)
        raise MilvusException(message=COLLISION)

    with pytest.raises(StoreWriteError) as failed:
        schema_change("http://root:secret@127.0.0.1:19530", "collection 't''s version marker", change)
    message = str(failed.value)
    assert len(calls) == ATTEMPTS and "\n" not in message and "secret" not in message
    assert message.startswith("the store 'http://***@127.0.0.1:19530' could not write collection 't''s")


def test_any_other_failure_is_raised_at_once():
    calls = []

    def change() -> None:
        calls.append(1)
        raise MilvusException(message="collection not found[collection=t]")

    with pytest.raises(MilvusException, match="collection not found"):
        schema_change("/s/m.db", "the marker", change)
    assert len(calls) == 1
