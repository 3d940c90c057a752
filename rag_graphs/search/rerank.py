"""Reranking the shared retrieve step's candidates: search ``fetch_k``, keep ``k``.

``RagContext.reranker`` names the reranker as a spec (``none``, ``mmr``,
``cross-encoder:/local/dir``) or is a LangChain ``BaseDocumentCompressor``. The retrieve
step searches ``fetch_k`` candidates when a reranker is set and keeps the reranker's top ``k``,
so every method gets it without a change to its graph.

- ``mmr``: maximal marginal relevance over the embedding model the store already uses
  (no extra model): each pick trades similarity to the query against similarity to the
  passages already picked, so a multi-hop question's second passage is not a paraphrase
  of its first.
- ``cross-encoder:<dir>``: a sentence-transformers ``CrossEncoder`` saved in a local
  directory (no cross-encoder ships offline; nothing is downloaded).
- ``llm``: listwise (RankGPT-style): the run's chat model reads the query and the numbered,
  fenced candidates and replies with an order like ``[3] > [1] > [2]``. For strong chat
  models: the embedded SmolLM2-135M cannot rank (it echoes the numbers in order or
  rambles), so its order falls back to the search's and the note step says so.
- a ``BaseDocumentCompressor`` (``CrossEncoderReranker``, ``FlashrankRerank``, ...): called
  with the candidates and the query; its output order is kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.vectorstores.utils import maximal_marginal_relevance

from rag_graphs.config.specs import CROSS_ENCODER, check_reranker
from rag_graphs.prompts import load_prompt
from rag_graphs.prompts.fencing import fence

Stored = Callable[[list[str]], dict[str, list[float]]]
"""Chunk ids -> the store's own dense vectors (``ChunkIndex.vectors``)."""


def passage_vectors(docs: list[Document], embeddings: Embeddings, stored: Stored | None) -> list[list[float]]:
    """Each passage's vector: the store's own (``stored``, by chunk id) when it has one, else
    embedded now (embedding 20 candidates costs seconds on a small CPU, reading their stored
    vectors milliseconds). Shared by MMR and the embeddings/redundancy compressors."""
    found = stored([str(d.id) for d in docs]) if stored else {}
    missing = [d for d in docs if str(d.id) not in found]
    if missing:
        fresh = embeddings.embed_documents([d.page_content for d in missing])
        found = {**found, **{str(d.id): v for d, v in zip(missing, fresh, strict=True)}}
    return [found[str(d.id)] for d in docs]


class Reranker(Protocol):
    """Candidates and the query in, the best ``k`` out (best first)."""

    name: str

    def rerank(self, query: str, docs: list[Document], k: int) -> list[Document]: ...


@dataclass
class MMRReranker:
    """Maximal marginal relevance over ``embeddings`` (``lambda_mult`` 1 = relevance only).

    Passage vectors come from ``stored`` (the store's own vectors, by chunk id) when given;
    only passages it lacks are embedded again (embedding 20 candidates per search costs
    seconds on a small CPU, reading their stored vectors milliseconds)."""

    embeddings: Embeddings
    lambda_mult: float = 0.5
    stored: Stored | None = None
    name: str = "mmr"

    def rerank(self, query: str, docs: list[Document], k: int) -> list[Document]:
        if len(docs) <= 1:
            return docs[:k]
        query_vec = np.array(self.embeddings.embed_query(query))
        doc_vecs = np.array(passage_vectors(docs, self.embeddings, self.stored))
        picks = maximal_marginal_relevance(query_vec, list(doc_vecs), lambda_mult=self.lambda_mult, k=k)
        return [docs[i] for i in picks]


@dataclass
class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` scoring (query, passage) pairs."""

    path: str
    name: str = "cross-encoder"

    def rerank(self, query: str, docs: list[Document], k: int) -> list[Document]:
        if not docs:
            return []
        scores = _cross_encoder(self.path).predict([(query, d.page_content) for d in docs])
        order = sorted(range(len(docs)), key=lambda i: -float(scores[i]))
        return [_with_score(docs[i], float(scores[i])) for i in order[:k]]


LLM_PASSAGE_CHARS = 1200
"""Characters of each candidate the listwise prompt shows (RankGPT cuts passages too): 20
candidates stay within a small model's context."""
_NUMBER = re.compile(r"\[(\d+)\]")
_BARE = re.compile(r"\d+")
_BARE_RANKING = re.compile(r"\s*\d+(?:\s*(?:>|,)\s*\d+)*\s*\.?\s*")


def parse_order(reply: str, count: int) -> list[int] | None:
    """Candidate indexes (0-based) in the order ``reply`` names them (``[3] > [1]``, or a bare
    ``3 > 1`` when the whole reply is such a list: digits inside prose, e.g. a year in an echoed
    passage, are no ranking): unknown and repeated numbers are ignored and the unmentioned
    candidates follow in their original order. ``None`` when no usable number."""
    numbers = _NUMBER.findall(reply) or (_BARE.findall(reply) if _BARE_RANKING.fullmatch(reply) else [])
    order: list[int] = []
    for number in numbers:
        at = int(number) - 1
        if 0 <= at < count and at not in order:
            order.append(at)
    if not order:
        return None
    return order + [i for i in range(count) if i not in order]


@dataclass
class LLMReranker:
    """Listwise reranking by the run's chat model (RankGPT-style), one call per search.

    A reply naming no candidate, or a model error, keeps the search's order; ``fallback``
    then says why (the retrieve step's note shows it) and ``replies`` keeps the model's
    messages for usage counting."""

    model: Callable[[], BaseChatModel]
    name: str = "llm"
    fallback: str = ""
    replies: list[AIMessage] = field(default_factory=list)

    def rerank(self, query: str, docs: list[Document], k: int) -> list[Document]:
        self.fallback = ""
        if len(docs) <= 1:
            return docs[:k]
        passages = "\n".join(
            f"[{i}]\n{fence(d.page_content[:LLM_PASSAGE_CHARS])}" for i, d in enumerate(docs, start=1)
        )
        messages = load_prompt("rerank_listwise").format_messages(
            question=query, passages=passages, count=str(len(docs))
        )
        try:
            reply = self.model().invoke(messages)
        except Exception as exc:  # a ranking is an optimisation: the search's order still answers
            self.fallback = f"model error ({type(exc).__name__}); kept the search order"
            return docs[:k]
        if isinstance(reply, AIMessage):
            self.replies.append(reply)
        order = parse_order(str(reply.content), len(docs))
        if order is None:
            self.fallback = f"unparsable reply {str(reply.content)[:60]!r}; kept the search order"
            return docs[:k]
        return [docs[i] for i in order[:k]]


@dataclass
class CompressorReranker:
    """Any LangChain ``BaseDocumentCompressor``: its output, in its order, cut to ``k``."""

    compressor: BaseDocumentCompressor
    name: str = "compressor"

    def rerank(self, query: str, docs: list[Document], k: int) -> list[Document]:
        return list(self.compressor.compress_documents(docs, query))[:k]


@lru_cache(maxsize=4)
def _cross_encoder(path: str) -> Any:
    """The cross-encoder saved at ``path``, loaded once per process."""
    from sentence_transformers import CrossEncoder

    return CrossEncoder(path, device="cpu", local_files_only=True)


def _with_score(doc: Document, score: float) -> Document:
    return Document(
        id=doc.id, page_content=doc.page_content, metadata={**doc.metadata, "rerank_score": score}
    )


def reranker_for(
    spec: str | BaseDocumentCompressor,
    embeddings: Embeddings,
    *,
    lambda_mult: float = 0.5,
    stored: Stored | None = None,
    model: Callable[[], BaseChatModel] | None = None,
) -> Reranker | None:
    """The reranker ``spec`` names (``None`` for ``none``); ``embeddings`` and the store's
    vectors (``stored``) serve MMR, ``model`` (called when first needed) the LLM reranker."""
    spec = check_reranker(spec)
    if isinstance(spec, BaseDocumentCompressor):
        return CompressorReranker(spec, name=type(spec).__name__)
    if spec == "none":
        return None
    if spec == "mmr":
        return MMRReranker(embeddings, lambda_mult=lambda_mult, stored=stored)
    if spec == "llm":
        if model is None:
            raise ValueError("RagContext.reranker='llm': no chat model given to rank with")
        return LLMReranker(model)
    return CrossEncoderReranker(str(Path(spec[len(CROSS_ENCODER) :]).expanduser()))
