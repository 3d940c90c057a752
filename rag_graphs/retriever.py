"""``RagRetriever``: the methods' shared retrieve step as a LangChain retriever.

    from rag_graphs import RagContext, RagRetriever

    retriever = RagRetriever(context=RagContext(k=6, reranker="mmr", expand="neighbours:1"))
    docs = retriever.invoke("Where was the founder of Django born?")

It returns exactly the passages a method's ``retrieve`` node keeps for one query: the context's
search (store, mode, filters, or ``RagContext.retriever``), then its reranker, expansion and
compression (``rag_graphs.nodes.retrieve.keep``), best first, each with its chunk id, so any
LangChain chain or agent can use rag-graphs retrieval without running a method graph.
"""

from __future__ import annotations

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, InstanceOf

from rag_graphs.config.context import RagContext
from rag_graphs.nodes.retrieve import fetch_k, keep
from rag_graphs.search.retrieval import retriever_for


class RagRetriever(BaseRetriever):
    """A query's passages as the shared retrieve step keeps them (search, rerank, expand,
    compress), under ``context`` (default: a ``RagContext`` from the environment)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    context: InstanceOf[RagContext] = Field(default_factory=RagContext)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        ctx = self.context
        hits = retriever_for(ctx, k=fetch_k(ctx)).invoke(query, config={"callbacks": run_manager.get_child()})
        return keep(ctx, [query], [hits]).rankings[0]
