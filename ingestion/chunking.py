"""DoclingDocument -> LangChain ``Document`` chunks with provenance and stable ids.

Text is split by Docling's HybridChunker, which respects document structure
and counts tokens with the embedding model's own tokenizer, so no chunk is
truncated when embedded. What is embedded is the contextualised text (heading
path + passage): a passage alone often lacks the entity it talks about.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from docling_core.transforms.chunker.hierarchical_chunker import (
    ChunkingDocSerializer,
    ChunkingSerializerProvider,
)
from docling_core.transforms.chunker.hybrid_chunker import HybridChunker
from docling_core.transforms.serializer.markdown import MarkdownTableSerializer
from langchain_core.documents import Document

_KINDS = {"table": "table", "picture": "picture", "chart": "picture"}


class MarkdownTables(ChunkingSerializerProvider):
    """Serialise tables as Markdown (header row kept), not Docling's "row, col = value" triplets."""

    def get_serializer(self, doc):
        return ChunkingDocSerializer(doc=doc, table_serializer=MarkdownTableSerializer())


def chunk_id(source: str, doc_hash: str, crefs: list[str], text: str) -> str:
    """Stable id from the source, the file's content hash, the items' crefs and the chunk text.

    The same file ingested again yields the same ids (so nothing is added); a
    changed file yields new ids; two files with equal content keep separate
    chunks, so editing or deleting one never removes the other's.
    """
    key = "\x1f".join([source, doc_hash, ",".join(crefs), text])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _kind(labels: list[str]) -> str:
    kinds = {_KINDS.get(label, "text") for label in labels}
    return kinds.pop() if len(kinds) == 1 else "text"


def chunk_document(doc, *, source: str, tokenizer) -> list[Document]:
    """Split ``doc`` into chunks that each carry full provenance metadata.

    Metadata: ``chunk_id``, ``source``, ``doc_hash``, ``title``, ``kind``
    (text/table/picture), ``crefs`` (Docling self-refs of the items),
    ``page`` (first page or -1), ``pages``, ``headings``, ``content_hash``,
    ``chunk_index``, ``captioner`` (None for text), ``ingested_at``.
    """
    chunker = HybridChunker(tokenizer=tokenizer, merge_peers=True, serializer_provider=MarkdownTables())
    doc_hash = (
        str(doc.origin.binary_hash)
        if doc.origin
        else hashlib.sha256(doc.export_to_markdown().encode()).hexdigest()
    )
    now = datetime.now(UTC).isoformat(timespec="seconds")
    chunks: list[Document] = []
    for index, chunk in enumerate(chunker.chunk(dl_doc=doc)):
        text = chunker.contextualize(chunk=chunk).strip()
        if not text:
            continue
        items = chunk.meta.doc_items
        crefs = [item.self_ref for item in items]
        pages = sorted({p.page_no for item in items for p in (item.prov or [])})
        cid = chunk_id(source, doc_hash, crefs, text)
        chunks.append(
            Document(
                id=cid,
                page_content=text,
                metadata={
                    "chunk_id": cid,
                    "source": source,
                    "doc_hash": doc_hash,
                    "title": doc.name,
                    "kind": _kind([str(item.label.value) for item in items]),
                    "crefs": crefs,
                    "page": pages[0] if pages else -1,
                    "pages": pages,
                    "headings": list(chunk.meta.headings or []),
                    "content_hash": hashlib.sha256(text.encode("utf-8")).hexdigest()[:16],
                    "chunk_index": index,
                    "captioner": None,
                    "ingested_at": now,
                },
            )
        )
    return chunks
