"""Small-to-big retrieval: sentence rows of every chunk, searched instead of the chunks.

A chunk's embedding averages everything it says; one sentence's embedding says one thing, so a
query can match the sentence that answers it more sharply. ``build_sentences`` stores each
chunk's sentences as child rows in an auxiliary collection ``<collection>_sentences`` (like the
entity graph's ``<collection>_ner_title``), each with ``parent_id`` (the chunk id) and the
chunk's own metadata (so access labels and filters apply to children as to parents).
``search_parents`` searches the sentences and returns their parent chunks: deduplicated, in
the order of each parent's best sentence, scored by it. Building resumes: sentences already
stored are skipped before embedding.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from langchain_core.documents import Document

from rag_graphs.store.fields import ENTITIES_FIELD, RRF_K, SearchMode
from rag_graphs.store.index import ChunkIndex, open_index

SUFFIX = "_sentences"
FANOUT = 4
"""Sentences fetched per parent asked for (several sentences of one chunk often rank together)."""
MIN_CHARS = 20
"""A shorter piece (a heading line, "Fig. 2.") joins the sentence after it."""
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])|\n+")
_SKIPPED = {"chunk_id", ENTITIES_FIELD, "crefs", "pages", "headings", "caption", "captioner"}


def sentence_collection(collection: str) -> str:
    """The auxiliary collection holding ``collection``'s sentence rows."""
    return collection + SUFFIX


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (punctuation or line breaks), short pieces joined to the next."""
    out: list[str] = []
    carry = ""
    for piece in _SPLIT.split(text):
        piece = (carry + " " + piece).strip() if carry else piece.strip()
        if len(piece) < MIN_CHARS:
            carry = piece
            continue
        out.append(piece)
        carry = ""
    if carry:
        if out:
            out[-1] = f"{out[-1]} {carry}"
        else:
            out.append(carry)
    return out


def sentence_rows(chunk: Document) -> list[Document]:
    """``chunk``'s sentences as child rows (ids stable: parent id and position)."""
    parent = str(chunk.id)
    meta = {k: v for k, v in chunk.metadata.items() if k not in _SKIPPED and k != "score"}
    rows = []
    for i, sentence in enumerate(split_sentences(chunk.page_content)):
        cid = hashlib.sha256(f"{parent}\x1f{i}".encode()).hexdigest()[:32]
        rows.append(
            Document(
                id=cid,
                page_content=sentence,
                metadata={**meta, "chunk_id": cid, "parent_id": parent, "sentence_index": i},
            )
        )
    return rows


@dataclass
class SentenceReport:
    """What a sentence build did."""

    collection: str
    chunks: int
    sentences: int
    added: int

    def summary(self) -> str:
        return (
            f"{self.collection}: {self.sentences} sentences of {self.chunks} chunks "
            f"({self.added} new, {self.sentences - self.added} already stored)"
        )


def children_of(index: ChunkIndex) -> ChunkIndex:
    """The open sentence collection of ``index`` (created on first write), same store and model."""
    return open_index(index.uri, sentence_collection(index.collection), index.embeddings, hybrid=index.hybrid)


def build_sentences(index: ChunkIndex, *, batch: int = 512, progress=None) -> SentenceReport:
    """Store the sentences of every chunk of ``index`` not stored yet; re-running resumes.

    The chunks are read first and the iterator closed: embedding a batch takes long enough on a
    busy CPU for the store's connection to drop an iterator left open."""
    children = children_of(index)
    docs = [ChunkIndex._to_document(r) for r in index.stored.scan(index._result_fields())]
    chunks = sentences = added = 0
    for start in range(0, len(docs), batch):
        kids = [s for d in docs[start : start + batch] for s in sentence_rows(d)]
        chunks += len(docs[start : start + batch])
        sentences += len(kids)
        added += children.add(kids)
        if progress:
            progress(chunks, sentences)
    children.flush()
    return SentenceReport(children.collection, chunks, sentences, added)


def has_sentences(index: ChunkIndex) -> bool:
    """True when ``index`` has a sentence collection with rows in it."""
    name = sentence_collection(index.collection)
    return index.derived(name).exists() and children_of(index).count() > 0


def search_parents(
    index: ChunkIndex,
    queries: list[str],
    *,
    k: int,
    mode: SearchMode,
    expr: str | None,
    rrf_k: int = RRF_K,
) -> list[list[tuple[Document, float]]]:
    """Top-``k`` parent chunks per query, found through their sentences (best sentence first).

    Each parent carries the sentence that found it (``matched_sentence``). Sentences of a
    chunk deleted since the build lead nowhere and are skipped.
    """
    found = children_of(index).search_many(queries, k=k * FANOUT, mode=mode, expr=expr, rrf_k=rrf_k)
    wanted = list(dict.fromkeys(str(d.metadata["parent_id"]) for hits in found for d, _ in hits))
    # the filter again on the parents: a sentence row carries the chunk's access labels, not its
    # other fields, so a filter denying a chunk by heading or id admits its sentences
    parents = {str(d.id): d for d in index.get(wanted, expr=expr)}
    out = []
    for hits in found:
        best: dict[str, tuple[Document, float]] = {}
        for child, score in hits:
            pid = str(child.metadata.get("parent_id"))
            if pid in parents and pid not in best:
                parent = parents[pid]
                meta = {**parent.metadata, "matched_sentence": child.page_content}
                best[pid] = (Document(id=parent.id, page_content=parent.page_content, metadata=meta), score)
        out.append(list(best.values())[:k])
    return out
