"""The Milvus server code path, for real: milvus-lite serving a data directory over loopback gRPC."""

from __future__ import annotations

from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.store import ChunkIndex


def test_a_server_uri_ingests_searches_and_serves_two_clients(server_uri, demo_corpus, fake_embeddings):
    first = ChunkIndex(uri=server_uri, collection="shared", embeddings=fake_embeddings)
    report = ingest([demo_corpus], index=first, options=IngestOptions(progress=False))
    assert not report.failed and report.added == report.chunks > 5
    # A second client (what a second process would open) sees the same chunks; no lock applies.
    second = ChunkIndex(uri=server_uri, collection="shared", embeddings=fake_embeddings)
    assert second.count() == report.chunks and second.hybrid
    hits = second.search("Velmora Institute founder", k=3)
    assert len(hits) == 3 and all(
        d.metadata["source"].endswith(tuple(".md .html .txt .csv".split())) for d, _ in hits
    )
    assert sum(n for kinds in second.sources().values() for n in kinds.values()) == report.chunks
