"""Searching through the user's own LangChain retriever or vector store (``RagContext.retriever``)
instead of the Milvus chunk store.

Its hits are normalised so the rest of a run treats them as stored chunks: each gets a stable
id (the document's own, else a hash of its text) and the provenance fields citations read
(``source``, ``crefs``, ``kind``, ``page``) with safe defaults when it has none. Options that
need the Milvus store (hybrid or graph search, filters and access fields, sentence search,
neighbour expansion) are refused when the context is built (``refusal``); RAPTOR and
hipporag refuse it when they run (``refuse_own_retriever``).
"""

from __future__ import annotations

import hashlib
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict

DEFAULTS: dict[str, Any] = {"source": "", "crefs": [""], "kind": "text", "page": -1}
"""Provenance a hit without its own gets (citations read these fields)."""

FIELD = "RagContext.retriever"


def content_id(text: str) -> str:
    """A stable id for a document without one: the first 16 hex digits of its text's SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def normalised(doc: Document, score: float | None = None) -> Document:
    """A copy of the user's ``doc`` as a run's hit: a stable id and provenance defaults (the
    user's own metadata wins), its score in ``metadata["score"]`` when the source gives one."""
    metadata = {**DEFAULTS, **doc.metadata}
    if score is not None:
        metadata["score"] = score
    doc_id = str(doc.id or content_id(doc.page_content))
    return Document(id=doc_id, page_content=doc.page_content, metadata=metadata)


class OwnRetriever(BaseRetriever):
    """The top ``k`` hits of the user's retriever or vector store, normalised (``normalised``).

    A ``VectorStore`` is searched with ``similarity_search_with_score`` (its own
    ``as_retriever(search_kwargs={"k": k})`` when it has no scores); a ``BaseRetriever`` is
    invoked as it is and its first ``k`` hits kept.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    source: BaseRetriever | VectorStore
    k: int = 4

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        config: RunnableConfig = {"callbacks": run_manager.get_child()}
        pairs: list[tuple[Document, float | None]]
        if isinstance(self.source, VectorStore):
            try:
                pairs = list(self.source.similarity_search_with_score(query, k=self.k))
            except NotImplementedError:
                docs = self.source.as_retriever(search_kwargs={"k": self.k}).invoke(query, config=config)
                pairs = [(d, None) for d in docs]
        else:
            pairs = [(d, None) for d in self.source.invoke(query, config=config)]
        return [normalised(doc, score) for doc, score in pairs[: self.k]]


def refuse_own_retriever(ctx: Any, what: str) -> None:
    """Refuse a method that needs the Milvus store (``what`` names it) when ``ctx`` brings its
    own retriever.

    Raises:
        SetupError: ``RagContext.retriever`` is set.
    """
    from rag_graphs.config.errors import SetupError

    if ctx.retriever is not None:
        raise SetupError(
            f"{FIELD} (your own retriever) cannot serve {what}, which reads the Milvus store's own "
            f"collections; use another method, or leave {FIELD} unset to search the Milvus store"
        )
