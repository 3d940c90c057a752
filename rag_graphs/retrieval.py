"""Search over the chunk store, as graphs see it.

The store itself belongs to ``ingestion``; this module turns a ``RagContext``
into the right open index and returns LangChain ``Document``s whose ``id`` is
the stored chunk id, so citations always resolve.
"""

from __future__ import annotations

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from ingestion import ChunkIndex, load_embeddings, open_index
from rag_graphs.context import RagContext


def embeddings_for(ctx: RagContext) -> Embeddings:
    """The context's embedding model (spec loaded once per process, or the instance)."""
    return ctx.embeddings if isinstance(ctx.embeddings, Embeddings) else load_embeddings(ctx.embeddings)


def index_for(ctx: RagContext) -> ChunkIndex:
    """The open chunk index the context points at."""
    return open_index(ctx.store_uri, ctx.collection, embeddings_for(ctx))


def search(ctx: RagContext, query: str, *, k: int | None = None) -> list[Document]:
    """Top chunks for ``query``; each carries ``metadata["score"]`` and ``id``."""
    hits = index_for(ctx).search(query, k=k or ctx.k, mode=ctx.search_mode)
    return [
        Document(id=doc.id, page_content=doc.page_content, metadata={**doc.metadata, "score": score})
        for doc, score in hits
    ]
