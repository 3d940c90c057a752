"""A dataset's passages in Milvus: one chunk per passage, its id the passage id.

Keeping the dataset's ids as chunk ids makes supporting-passage recall a set
lookup, and lets the distractor and oracle settings reuse the one collection
through a search filter (``rag_graphs.ingestion.ids_filter``) instead of one store per question.
"""

from __future__ import annotations

import hashlib
import re

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from rag_graphs.eval.datasets import Dataset
from rag_graphs.store import ChunkIndex, open_index
from rag_graphs.support.progress import progress_bar

BATCH = 256


def collection_name(dataset: Dataset, embeddings: str | Embeddings) -> str:
    """A collection name per (dataset, corpus file, embedding model), valid for Milvus."""
    spec = embeddings if isinstance(embeddings, str) else type(embeddings).__name__
    source = dataset.corpus_path or dataset.questions_path
    key = f"{source.resolve()}|{source.stat().st_size}|{spec}"
    slug = re.sub(r"[^0-9a-zA-Z_]", "_", dataset.name)[:40]
    return f"eval_{slug}_{hashlib.sha256(key.encode()).hexdigest()[:10]}"


def passage_document(passage: dict, dataset: Dataset) -> Document:
    """One passage as a chunk: the title leads the text, as retrievers in the papers index it."""
    title = str(passage.get("title") or "")
    text = f"{title}\n{passage['text']}" if title else passage["text"]
    metadata = {
        "chunk_id": passage["id"],
        "source": f"{dataset.name}/{title or passage['id']}",
        "title": title,
        "kind": "text",
        "page": -1,
        "crefs": [],
    }
    return Document(page_content=text, metadata=metadata)


def load_passages(dataset: Dataset, index: ChunkIndex, *, progress: bool = True) -> int:
    """Store the dataset's passages (idempotent: stored ids are skipped); return how many were new."""
    passages = list(dataset.passages())
    if not passages:
        raise ValueError(f"dataset {dataset.name!r} has no passages (no corpus.jsonl, no 'passages')")
    if index.count() >= len(passages):
        return 0
    added = 0
    bar = progress_bar(
        total=len(passages), desc=f"indexing {dataset.name}", unit="passage", disable=not progress
    )
    for start in range(0, len(passages), BATCH):
        batch = passages[start : start + BATCH]
        added += index.add([passage_document(p, dataset) for p in batch])
        bar.update(len(batch))
    bar.close()
    index.flush()
    return added


def open_corpus(dataset: Dataset, uri: str, embeddings: Embeddings, spec: str | Embeddings) -> ChunkIndex:
    """The dataset's collection in the store at ``uri`` (created and filled on first use)."""
    index = open_index(uri, collection_name(dataset, spec), embeddings)
    load_passages(dataset, index)
    return index
