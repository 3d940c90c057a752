"""Searching through the user's own LangChain retriever or vector store (``RagContext.retriever``)
instead of the Milvus chunk store.

Its hits are normalised so the rest of a run treats them as stored chunks: each gets a stable
id (the document's own, else a hash of its text) and the provenance fields citations read
(``source``, ``crefs``, ``kind``, ``page``), each of the type citations need (a page is an int, crefs
a list of strings; a value of another shape becomes the default, never a crash), and loses the
fields a run writes itself (``cached``, ``graph_seeds``, ``rrf_score``, ...), so a hit cannot make a
step say "search cache hit" or pass a score off as the run's. Each search has a time limit
(``RagContext.retriever_timeout``): a retriever that hangs fails the run in one line instead of
hanging it. Options that need the Milvus store are refused when the context is built
(``rag_graphs.config.specs.own_retriever_refusal``); RAPTOR and hipporag refuse it when they run
(``refuse_own_retriever``).
"""

from __future__ import annotations

import contextvars
import hashlib
import threading
from typing import Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore

from rag_graphs.config.errors import SetupError

DEFAULTS: dict[str, Any] = {"source": "", "crefs": [""], "kind": "text", "page": -1}
"""Provenance a hit without its own gets (citations read these fields)."""
RESERVED = frozenset(
    {
        "score",
        "cached",
        "graph_seeds",
        "graph_walk",
        "rrf_score",
        "rerank_score",
        "matched_sentence",
        "compressed_from_chars",
        "expanded_from",
        "hop",
    }
)
"""Metadata a run writes on its hits: a user's hit carrying one loses it (``score`` is set again
from the source's own similarity score, when it gives one)."""

FIELD = "RagContext.retriever"


class RetrieverTimeout(RuntimeError):
    """The user's retriever gave no hits within ``RagContext.retriever_timeout`` (not retried)."""


def content_id(text: str) -> str:
    """A stable id for a document without one: the first 16 hex digits of its text's SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def normalised(doc: Document, score: float | None = None) -> Document:
    """A copy of the user's ``doc`` as a run's hit: a stable id, the provenance fields with the
    types citations read (the user's values when they fit), no field a run writes itself, its
    score in ``metadata["score"]`` when the source gives one."""
    text = doc.page_content if isinstance(doc.page_content, str) else str(doc.page_content)
    metadata = {k: v for k, v in dict(doc.metadata or {}).items() if k not in RESERVED}
    metadata["source"] = str(metadata.get("source") or DEFAULTS["source"])
    metadata["kind"] = str(metadata.get("kind") or DEFAULTS["kind"])
    metadata["page"] = _page(metadata.get("page"))
    metadata["crefs"] = _crefs(metadata.get("crefs"))
    if score is not None:
        metadata["score"] = float(score)
    doc_id = str(doc.id or content_id(text))
    return Document(id=doc_id, page_content=text, metadata=metadata)


def _page(value: Any) -> int:
    """A page number citations can print: an int (or digits), else -1 (none)."""
    if isinstance(value, bool):
        return -1
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return -1


def _crefs(value: Any) -> list[str]:
    """Docling references as a list of strings: one value becomes a list of one."""
    if isinstance(value, list | tuple) and value:
        return [str(v) for v in value]
    if isinstance(value, str | int) and not isinstance(value, bool):
        return [str(value)]
    return list(DEFAULTS["crefs"])


def search_own(source: BaseRetriever | VectorStore, query: str, k: int, timeout: float) -> list[Document]:
    """The top ``k`` hits of ``source`` for ``query``, normalised, within ``timeout`` seconds.

    A ``VectorStore`` is searched with ``similarity_search_with_score`` (its own
    ``as_retriever(search_kwargs={"k": k})`` when it has no scores); a ``BaseRetriever`` is invoked
    as it is and its first ``k`` hits kept. The search runs in a daemon thread (with this call's
    context, so it traces under the run): past ``timeout`` the run fails with ``RetrieverTimeout``
    and the process can still exit while the user's code hangs.

    Raises:
        RetrieverTimeout: no hits within ``timeout`` seconds.
    """
    result: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            result["pairs"] = _pairs(source, query, k)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            result["error"] = exc
        finally:
            done.set()

    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(work,), daemon=True, name="rag-graphs-own-retriever").start()
    if not done.wait(timeout):
        raise RetrieverTimeout(
            f"{FIELD} (your {type(source).__name__}) gave no hits within {timeout:g} s "
            "(RagContext.retriever_timeout, RAG_GRAPHS_RETRIEVER_TIMEOUT): check the retriever, "
            "or raise the limit"
        )
    if "error" in result:
        raise result["error"]
    return [normalised(doc, score) for doc, score in result["pairs"][:k]]


def _pairs(source: BaseRetriever | VectorStore, query: str, k: int) -> list[tuple[Document, float | None]]:
    if isinstance(source, VectorStore):
        try:
            return list(source.similarity_search_with_score(query, k=k))
        except NotImplementedError:
            return [(d, None) for d in source.as_retriever(search_kwargs={"k": k}).invoke(query)]
    return [(d, None) for d in source.invoke(query)]


def refuse_own_retriever(ctx: Any, what: str) -> None:
    """Refuse a method that needs the Milvus store (``what`` names it) when ``ctx`` brings its
    own retriever.

    Raises:
        SetupError: ``RagContext.retriever`` is set.
    """
    if ctx.retriever is not None:
        raise SetupError(
            f"{FIELD} (your own retriever) cannot serve {what}, which reads the Milvus store's own "
            f"collections; use another method, or leave {FIELD} unset to search the Milvus store"
        )
