"""A dataset's passages in Milvus: one chunk per passage, its id the passage id.

Keeping the dataset's ids as chunk ids makes supporting-passage recall a set
lookup, and lets the distractor and oracle settings reuse the one collection
through a search filter (``passages_filter``) instead of one store per question.

The collection is named by what it holds: a hash of every stored piece (id, title, text) and
the embedding model. An edited corpus gets a new collection, even when the edit keeps the
file's path and size (``Korvik`` -> ``Korvak`` once reused the old one and served the old
text); an unchanged copy elsewhere reuses the existing one.

A passage longer than a chunk may be (Milvus keeps at most 65,535 bytes of text) is stored in
pieces, each led by the passage's title and carrying its id in ``passage_id``: the first piece
keeps the passage id, the next ones are ``<id>#2``, ``<id>#3``... so recall and the settings'
filters still count every piece as the passage.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from rag_graphs.eval.datasets import Dataset
from rag_graphs.store import ChunkIndex, ids_filter, open_index, quote
from rag_graphs.store.fields import MAX_CHUNK_CHARS, split_text
from rag_graphs.support.progress import progress_bar

BATCH = 256
PASSAGE_FIELD = "passage_id"
"""Metadata naming the passage a piece belongs to (the passage id itself for a whole passage)."""
_LAYOUT = "pieces-v1"
"""Part of the collection key: a change to how passages become chunks gets new collections."""


def collection_name(dataset: Dataset, embeddings: str | Embeddings) -> str:
    """A collection name per (dataset name, stored content, embedding model), valid for Milvus."""
    return _name(dataset, corpus_documents(dataset), embeddings)


def _name(dataset: Dataset, docs: Iterable[Document], embeddings: str | Embeddings) -> str:
    spec = embeddings if isinstance(embeddings, str) else type(embeddings).__name__
    digest = hashlib.sha256(f"{_LAYOUT}\x1f{spec}".encode())
    for doc in docs:
        for part in (doc.metadata["chunk_id"], doc.metadata["title"], doc.page_content):
            digest.update(b"\x1e" + str(part).encode("utf-8", "surrogatepass"))
    slug = re.sub(r"[^0-9a-zA-Z_]", "_", dataset.name)[:40]
    return f"eval_{slug}_{digest.hexdigest()[:16]}"


def passage_documents(passage: dict, dataset: Dataset) -> list[Document]:
    """One passage as chunks: the title leads the text, as retrievers in the papers index it;
    a passage over ``MAX_CHUNK_CHARS`` (the bound ingest's chunks keep) becomes several pieces,
    each led by the title."""
    title = str(passage.get("title") or "")
    lead = f"{title}\n" if title else ""
    pieces = split_text(passage["text"], MAX_CHUNK_CHARS - len(lead))
    passage_id = passage["id"]
    docs = []
    for n, piece in enumerate(pieces, start=1):
        metadata = {
            "chunk_id": passage_id if n == 1 else f"{passage_id}#{n}",
            PASSAGE_FIELD: passage_id,
            "source": f"{dataset.name}/{title or passage_id}",
            "title": title,
            "kind": "text",
            "page": -1,
            "crefs": [],
        }
        docs.append(Document(page_content=lead + piece, metadata=metadata))
    return docs


def corpus_documents(dataset: Dataset) -> list[Document]:
    """Every chunk the dataset's passages become, in corpus order.

    Raises:
        ValueError: the dataset has no passages, or a passage is malformed (file, line, field).
    """
    docs = [doc for passage in dataset.passages() for doc in passage_documents(passage, dataset)]
    if not docs:
        raise ValueError(f"dataset {dataset.name!r} has no passages (no corpus.jsonl, no 'passages')")
    return docs


def passages_filter(ids: Sequence[str]) -> str:
    """A filter matching these passages, every piece of each (``ids_filter`` would miss a long
    passage's later pieces)."""
    return f"{ids_filter(list(ids))} or {PASSAGE_FIELD} in [{', '.join(quote(i) for i in ids)}]"


def _load(dataset: Dataset, docs: list[Document], index: ChunkIndex, *, progress: bool) -> int:
    """Store the dataset's passages (idempotent: a store holding them all is left as it is); how
    many chunks were new."""
    if index.count() >= len(docs):
        return 0
    added = 0
    bar = progress_bar(total=len(docs), desc=f"indexing {dataset.name}", unit="passage", disable=not progress)
    for start in range(0, len(docs), BATCH):
        batch = docs[start : start + BATCH]
        added += index.add(batch)
        bar.update(len(batch))
    bar.close()
    index.flush()
    return added


def open_corpus(dataset: Dataset, uri: str, embeddings: Embeddings, spec: str | Embeddings) -> ChunkIndex:
    """The dataset's collection in the store at ``uri`` (created and filled on first use)."""
    docs = corpus_documents(dataset)
    index = open_index(uri, _name(dataset, docs, spec), embeddings)
    _load(dataset, docs, index, progress=True)
    return index
