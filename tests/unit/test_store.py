"""The Milvus Lite index: idempotent string ids, search modes, safe filters, the lock."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from langchain_core.documents import Document

from rag_graphs.store import ChunkIndex, StoreLockedError, quote
from rag_graphs.store.index import open_index


def _chunk(cid: str, text: str, source: str = "/a.md", doc_hash: str = "h1") -> Document:
    return Document(
        page_content=text,
        metadata={
            "chunk_id": cid,
            "source": source,
            "doc_hash": doc_hash,
            "kind": "text",
            "crefs": ["#/texts/0"],
            "page": -1,
            "headings": ["H"],
        },
    )


CHUNKS = [
    _chunk("c1", "Adrian Holovaty was born in Chicago."),
    _chunk("c2", "Springfield is the capital of Illinois."),
    _chunk("c3", "Django is a web framework created by Adrian Holovaty."),
]


def test_adding_the_same_chunks_twice_stores_them_once(index: ChunkIndex):
    assert index.add(CHUNKS) == 3
    assert index.add(CHUNKS) == 0
    assert index.add(CHUNKS + [CHUNKS[0]]) == 0
    index.flush()
    assert index.count() == 3


def test_get_returns_stored_chunks_with_metadata_in_the_order_asked(index: ChunkIndex):
    index.add(CHUNKS)
    got = index.get(["c3", "missing", "c1"])
    assert [d.id for d in got] == ["c3", "c1"]
    assert got[1].page_content == "Adrian Holovaty was born in Chicago."
    assert got[1].metadata["headings"] == ["H"] and got[1].metadata["crefs"] == ["#/texts/0"]


@pytest.mark.parametrize("mode", ["hybrid", "dense"])
def test_search_finds_the_exact_passage(index: ChunkIndex, mode):
    index.add(CHUNKS)
    index.flush()
    hits = index.search("Springfield is the capital of Illinois.", k=2, mode=mode)
    assert hits[0][0].metadata["chunk_id"] == "c2"
    assert len(hits) == 2


def test_hybrid_bm25_finds_keyword_matches_that_fake_dense_vectors_cannot(index: ChunkIndex):
    # DeterministicFakeEmbedding gives unrelated vectors to different texts, so only
    # the BM25 half of the hybrid search can rank the keyword match first.
    index.add(CHUNKS)
    index.flush()
    hits = index.search("Springfield", k=1, mode="hybrid")
    assert hits[0][0].metadata["chunk_id"] == "c2"


def test_dense_only_collection_is_remembered_when_reopened(store_uri, fake_embeddings):
    dense = ChunkIndex(uri=store_uri, collection="d", embeddings=fake_embeddings, hybrid=False)
    dense.add(CHUNKS)
    again = ChunkIndex(uri=store_uri, collection="d", embeddings=fake_embeddings, hybrid=True)
    assert again.hybrid is False
    assert again.search("Springfield is the capital of Illinois.", k=1, mode="hybrid")[0][0].id == "c2"


def test_delete_stale_removes_only_other_versions_of_the_same_source(index: ChunkIndex):
    index.add(
        CHUNKS + [_chunk("old", "old text", doc_hash="h0"), _chunk("b", "x", source="/b.md", doc_hash="h0")]
    )
    assert index.delete_stale("/a.md", "h1") == 1
    index.flush()
    assert sorted(d.id for d in index.get(["c1", "c2", "c3", "old", "b"])) == ["b", "c1", "c2", "c3"]


def test_filter_values_are_quoted_so_they_cannot_inject_expressions(index: ChunkIndex):
    assert quote('a" or pk != "') == '"a\\" or pk != \\""'
    assert quote("line\nbreak\ttab") == '"line\\nbreak\\ttab"'
    index.add(CHUNKS)
    assert index.delete_stale('/a.md" or source != "', "zzz") == 0
    assert index.count() == 3


def test_empty_collection_answers_without_creating_anything(store_uri, fake_embeddings):
    idx = ChunkIndex(uri=store_uri, collection="empty", embeddings=fake_embeddings)
    assert (idx.count(), idx.search("x"), idx.get(["a"]), idx.existing_ids(["a"])) == (0, [], [], set())


def test_open_index_shares_one_client_per_store(store_uri, fake_embeddings):
    assert open_index(store_uri, "s", fake_embeddings) is open_index(store_uri, "s", fake_embeddings)


def test_second_process_gets_a_clear_lock_error(tmp_path, fake_embeddings):
    uri = str(tmp_path / "locked.db")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys, time
            from pymilvus import MilvusClient
            MilvusClient(uri={uri!r})
            print("ready", flush=True)
            sys.stdin.read()
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreLockedError) as info:
            ChunkIndex(uri=uri, collection="c", embeddings=fake_embeddings)
        message = str(info.value)
        assert uri in message and "LOCK" in message and "http://localhost:19530" in message
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)


def test_sources_with_control_characters_are_stored_and_cleaned_up(index: ChunkIndex):
    source = "/odd\nname\t.md"
    index.add([_chunk("n1", "text one", source=source, doc_hash="old")])
    assert index.delete_stale(source, "new") == 1


@pytest.mark.parametrize("mode", ["hybrid", "dense"])
def test_chunks_added_with_their_vectors_are_not_embedded_again(index: ChunkIndex, fake_embeddings, mode):
    vectors = fake_embeddings.embed_documents([c.page_content for c in CHUNKS])

    class Refuses(type(fake_embeddings)):
        def embed_documents(self, texts):
            raise AssertionError("embedded again")

    index.store.embedding_func = Refuses(size=32)
    assert index.add(CHUNKS, vectors=vectors) == 3
    index.store.embedding_func = fake_embeddings
    index.flush()
    hits = index.search("Springfield is the capital of Illinois.", k=1, mode=mode)
    assert hits[0][0].id == "c2" and hits[0][0].metadata["headings"] == ["H"]
    with pytest.raises(ValueError, match="3 chunks but 2 vectors"):
        index.add(CHUNKS, vectors=vectors[:2])
