"""Contextual compression of the shared retrieve step: less text reaches the prompt.

``RagContext.compress`` is ``none`` or a chain of filters, comma-separated, applied in order
to each search's kept (reranked, expanded) passages:

- ``embeddings:<t>``: drop passages whose cosine similarity to the query is below ``t``. The
  passages' vectors are the store's own (``ChunkIndex.vectors``), so only the query is embedded.
- ``redundant:<t>``: drop a passage whose similarity to a higher-ranked kept one is ``t`` or
  more (near-duplicates: the same fact stored twice costs prompt tokens and says nothing new).
- ``llm``: the run's chat model keeps only the sentences of each passage that help answer
  (LangChain's ``LLMChainExtractor`` idea); a ``NO_OUTPUT`` or empty reply drops the passage,
  a model error keeps it whole, and only sentences copied from the passage replace it (a
  rewritten reply keeps the stored text). For strong chat models: SmolLM2-135M echoes or
  rewrites passages instead of extracting.

A compressed passage keeps its chunk id and metadata (citations resolve to the stored chunk)
and gains ``compressed_from_chars``. Dropped passages are what the note step lists, with the
prompt tokens saved (four characters a token, as the expansion budget counts). LangChain's
``EmbeddingsFilter`` lives in ``langchain_classic`` (not a dependency) and embeds every
passage again; the numpy filters here read the stored vectors instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage

from rag_graphs.config.specs import check_compress
from rag_graphs.prompts import load_prompt
from rag_graphs.prompts.fencing import fence
from rag_graphs.search.rerank import Stored, passage_vectors

NO_OUTPUT = "NO_OUTPUT"


def tokens(text: str) -> int:
    """A tokenizer-free estimate (four characters a token), as ``rag_graphs.search.neighbours`` counts."""
    return len(text) // 4


@dataclass
class Cut:
    """What one filter did to one search's passages."""

    kept: list[Document]
    dropped: list[str] = field(default_factory=list)
    shortened: list[str] = field(default_factory=list)
    replies: list[AIMessage] = field(default_factory=list)
    kept_on_error: int = 0
    unfaithful: int = 0


class Compressor(Protocol):
    """One filter of the chain: the query and passages (best first) in, what survives out."""

    name: str

    def compress(self, query: str, docs: list[Document]) -> Cut: ...


def _unit(rows: list[list[float]]) -> np.ndarray:
    matrix = np.array(rows, dtype=float)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


@dataclass
class SimilarityFilter:
    """A filter by cosine similarity over the passages' vectors (the store's own, by id)."""

    embeddings: Embeddings
    threshold: float
    stored: Stored | None = None

    def unit_vectors(self, docs: list[Document]) -> np.ndarray:
        return _unit(passage_vectors(docs, self.embeddings, self.stored))


@dataclass
class EmbeddingsFilter(SimilarityFilter):
    """Drops passages whose cosine similarity to the query is below ``threshold``."""

    name: str = "embeddings"

    def compress(self, query: str, docs: list[Document]) -> Cut:
        if not docs:
            return Cut([])
        query_vec = _unit([self.embeddings.embed_query(query)])[0]
        scores = self.unit_vectors(docs) @ query_vec
        keep = [bool(s >= self.threshold) for s in scores]
        return Cut(
            [d for d, ok in zip(docs, keep, strict=True) if ok],
            dropped=[str(d.id) for d, ok in zip(docs, keep, strict=True) if not ok],
        )


@dataclass
class RedundantFilter(SimilarityFilter):
    """Drops a passage at least ``threshold`` similar to a higher-ranked kept passage."""

    name: str = "redundant"

    def compress(self, query: str, docs: list[Document]) -> Cut:
        if len(docs) <= 1:
            return Cut(list(docs))
        vectors = self.unit_vectors(docs)
        kept: list[int] = []
        for i in range(len(docs)):
            if not kept or float(np.max(vectors[kept] @ vectors[i])) < self.threshold:
                kept.append(i)
        return Cut([docs[i] for i in kept], dropped=[str(d.id) for i, d in enumerate(docs) if i not in kept])


@dataclass
class LLMExtractor:
    """Keeps the sentences of each passage the chat model says help answer; one call per
    passage, batched at most ``max_concurrency`` at a time."""

    model: Callable[[], BaseChatModel]
    max_concurrency: int = 4
    name: str = "llm"

    def compress(self, query: str, docs: list[Document]) -> Cut:
        if not docs:
            return Cut([])
        template = load_prompt("compress_extract")
        prompts = [template.format_messages(question=query, passage=fence(d.page_content)) for d in docs]
        replies = self.model().batch(
            prompts,  # type: ignore[arg-type]
            config={"max_concurrency": self.max_concurrency},
            return_exceptions=True,
        )
        cut = Cut([])
        for doc, reply in zip(docs, replies, strict=True):
            if not isinstance(reply, AIMessage):  # a model error keeps the passage whole
                cut.kept.append(doc)
                cut.kept_on_error += 1
                continue
            cut.replies.append(reply)
            text = str(reply.content).strip()
            if not text or text.upper().startswith(NO_OUTPUT):
                cut.dropped.append(str(doc.id))
                continue
            extract = copied_sentences(text, doc.page_content)
            if not extract:  # a paraphrase or an invention: the stored text, never the model's
                cut.kept.append(doc)
                cut.unfaithful += 1
            elif len(extract) < len(doc.page_content):
                cut.shortened.append(str(doc.id))
                cut.kept.append(_shortened(doc, extract))
            else:  # the whole passage copied back: nothing cut
                cut.kept.append(doc)
        return cut


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def copied_sentences(reply: str, passage: str) -> str:
    """The sentences of ``reply`` that are copied from ``passage`` (whitespace and case aside),
    joined. A small model asked to extract often rewrites instead ("born in Korvik, Norway"):
    only text the chunk holds may stand in for it, or a citation would quote what its chunk
    never said."""
    where = " ".join(passage.split()).lower()
    if " ".join(reply.split()).lower() in where:  # one copied span: kept as written
        return reply
    parts = [part.strip() for part in _SENTENCE_END.split(reply) if part.strip()]
    return " ".join(part for part in parts if " ".join(part.split()).lower() in where)


def _shortened(doc: Document, text: str) -> Document:
    """``doc`` with ``text`` in place of its content: same id and metadata, plus the length of
    what it came from (the earliest one when filters chain)."""
    was = doc.metadata.get("compressed_from_chars", len(doc.page_content))
    return Document(id=doc.id, page_content=text, metadata={**doc.metadata, "compressed_from_chars": was})


@dataclass
class Compressed:
    """One search's passages after the chain, and what to say about it."""

    kept: list[Document]
    dropped: list[str]
    shortened: list[str]
    tokens_saved: int
    replies: list[AIMessage]
    kept_on_error: int
    unfaithful: int = 0

    def describe(self, spec: str) -> str:
        text = (
            f"compress {spec}: dropped {len(self.dropped)} ({', '.join(self.dropped) or 'none'})"
            f", shortened {len(self.shortened)}; ~{self.tokens_saved} prompt tokens saved"
        )
        if self.kept_on_error:
            text += f"; {self.kept_on_error} kept whole after a model error"
        if self.unfaithful:
            text += f"; {self.unfaithful} kept whole (the reply was not copied from the passage)"
        return text


@dataclass
class Chain:
    """The filters of one spec, applied in order."""

    filters: list[Compressor]

    def compress(self, query: str, docs: list[Document]) -> Compressed:
        out = Compressed(list(docs), [], [], 0, [], 0)
        for one in self.filters:
            cut = one.compress(query, out.kept)
            out.kept = cut.kept
            out.dropped += cut.dropped
            out.shortened += [i for i in cut.shortened if i not in out.shortened]
            out.replies += cut.replies
            out.kept_on_error += cut.kept_on_error
            out.unfaithful += cut.unfaithful
        out.shortened = [i for i in out.shortened if i not in out.dropped]
        out.tokens_saved = sum(tokens(d.page_content) for d in docs) - sum(
            tokens(d.page_content) for d in out.kept
        )
        return out


def compressor_for(
    spec: str,
    embeddings: Embeddings,
    *,
    stored: Stored | None = None,
    model: Callable[[], BaseChatModel] | None = None,
    max_concurrency: int = 4,
) -> Chain | None:
    """The chain ``spec`` names (``None`` for ``none``); ``embeddings`` and the store's vectors
    (``stored``) serve the similarity filters, ``model`` (called when first needed) ``llm``."""
    spec = check_compress(spec)
    if spec == "none":
        return None
    filters: list[Compressor] = []
    for part in spec.split(","):
        name, _, value = part.partition(":")
        if name == "embeddings":
            filters.append(EmbeddingsFilter(embeddings, float(value), stored))
        elif name == "redundant":
            filters.append(RedundantFilter(embeddings, float(value), stored))
        else:
            if model is None:
                raise ValueError(f"RagContext.compress={spec!r}: no chat model given for 'llm'")
            filters.append(LLMExtractor(model, max_concurrency))
    return Chain(filters)
