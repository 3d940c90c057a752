"""The schema every chunk collection shares: field names, index and search parameters, and the
collection properties that mark its version and a replacement under way."""

from __future__ import annotations

from typing import Literal

SearchMode = Literal["dense", "hybrid"]

TEXT_FIELD = "text"
PRIMARY_FIELD = "pk"
DENSE_FIELD = "dense"
TENANT_FIELD = "tenant"  # access labels set by IngestOptions(tenant=..., tags=...), dynamic fields
TAGS_FIELD = "tags"
ENTITIES_FIELD = "entities"  # the entity keys a chunk names (entity_graph.entities.annotate)
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
"""The one collection-wide record of files being replaced (JSON: source -> the new version's
doc_hash) that versions before per-writer records wrote; read to finish it (``store.replacing``)."""

EMBEDDINGS_PROPERTY = "rag_graphs.embeddings"
"""Collection property naming the embedding model a collection was created with (its spec, or
class and model name for an instance: ``embeddings_identity``); collections from before it
have none and are checked by dimension only."""


MAX_CHUNK_CHARS = 16_000
"""Characters of one stored chunk at most: Milvus stores at most 65,535 bytes of text, 4 per
character at worst. Ingest's chunks and the evaluator's passage pieces keep it (``split_text``)."""


def split_text(text: str, limit: int = MAX_CHUNK_CHARS) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters, cut at whitespace where there is some.

    A chunker bounds chunks by tokens, but one "token" can be a 200 KB run without spaces, and a
    corpus passage can be longer than the store keeps: such text would be refused by Milvus.
    """
    pieces = []
    while len(text) > limit:
        cut = text.rfind(" ", limit // 2, limit)
        cut = cut if cut > 0 else limit
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    return [*pieces, text] if text else pieces
