"""Search over the chunk store, as graphs see it.

The store itself belongs to ``ingestion``; this module turns a ``RagContext``
into the right open index and returns LangChain ``Document``s whose ``id`` is
the stored chunk id, so citations always resolve.
"""

from __future__ import annotations

from typing import Literal

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from ingestion import ChunkIndex, load_embeddings, open_index
from rag_graphs.context import RagContext


def embeddings_for(ctx: RagContext) -> Embeddings:
    """The context's embedding model (spec loaded once per process, or the instance)."""
    return ctx.embeddings if isinstance(ctx.embeddings, Embeddings) else load_embeddings(ctx.embeddings)


def index_for(ctx: RagContext) -> ChunkIndex:
    """The open chunk index the context points at."""
    return open_index(ctx.store_uri, ctx.collection, embeddings_for(ctx))


class ChunkRetriever(BaseRetriever):
    """A LangChain retriever over a ``ChunkIndex``.

    Graphs search through it so every search is a retriever run: LangSmith
    shows it in the trace tree and callbacks (the evaluator's timer) see it.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    index: ChunkIndex
    k: int = 4
    mode: Literal["dense", "hybrid"] = "hybrid"
    expr: str | None = None

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        hits = self.index.search(query, k=self.k, mode=self.mode, expr=self.expr)
        return [
            Document(id=doc.id, page_content=doc.page_content, metadata={**doc.metadata, "score": score})
            for doc, score in hits
        ]


def retriever_for(ctx: RagContext, *, k: int | None = None) -> ChunkRetriever:
    """The retriever the context describes (store, collection, k, mode, filter)."""
    return ChunkRetriever(
        index=index_for(ctx), k=k or ctx.k, mode=ctx.search_mode, expr=ctx.search_filter, tags=["rag-graphs"]
    )


def search(ctx: RagContext, query: str, *, k: int | None = None) -> list[Document]:
    """Top chunks for ``query``; each carries ``metadata["score"]`` and ``id``."""
    return retriever_for(ctx, k=k).invoke(query)
