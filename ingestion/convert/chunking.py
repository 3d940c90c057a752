"""DoclingDocument -> LangChain ``Document`` chunks with provenance and stable ids.

Three kinds of chunk, each findable and citable on its own:

- ``text``: Docling's HybridChunker (``counting.Chunker``: the same chunks, less CPU), which
  respects document structure and counts tokens with the embedding model's own tokenizer, so
  no chunk is truncated when embedded. What is embedded is the contextualised text
  (heading path + passage): a passage alone often lacks the entity it names.
- ``table``: one chunk per table, as Markdown under its heading path and
  caption; a table over the token budget is split by rows, header repeated,
  so every piece still says what its columns mean.
- ``picture``: one chunk per picture, carrying its description from a
  ``Captioner`` (Docling's default serializer drops picture descriptions,
  which is why pictures are chunked here rather than by the HybridChunker).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from docling_core.transforms.chunker.hierarchical_chunker import (
    ChunkingDocSerializer,
    ChunkingSerializerProvider,
)
from docling_core.transforms.serializer.base import BasePictureSerializer, BaseTableSerializer
from docling_core.transforms.serializer.common import create_ser_result
from docling_core.types.doc import (
    DocItem,
    PictureItem,
    SectionHeaderItem,
    TableItem,
    TextItem,
    TitleItem,
)
from langchain_core.documents import Document

from rag_graphs.ingestion.convert.captioning import FallbackCaptioner, PictureInput, caption_all
from rag_graphs.ingestion.convert.counting import Chunker
from rag_graphs.store.fields import split_text

CONTEXT_ITEMS = 2  # text items either side of a picture given to the captioner


class _Skip(BaseTableSerializer, BasePictureSerializer):
    """Serialise to nothing: tables and pictures get chunks of their own."""

    def serialize(self, *, item, doc_serializer, doc, **kwargs):
        return create_ser_result(text="", span_source=item)


class TextOnly(ChunkingSerializerProvider):
    """The HybridChunker's view of a document without its tables and pictures.

    One serializer per document: the HybridChunker and its inner HierarchicalChunker each ask for
    one, and building one deep-copies its default parameters (pydantic), ~0.6 ms a time: 1.3 s of
    the 6.7 s of CPU that chunking 1,000 HotpotQA passages took. The serializer keeps nothing of
    a call but a cache keyed by its parameters, so the two chunkers can share it."""

    def __init__(self) -> None:
        self._last: tuple[Any, Any] | None = None

    def get_serializer(self, doc):
        if self._last is None or self._last[0] is not doc:
            self._last = (
                doc,
                ChunkingDocSerializer(doc=doc, table_serializer=_Skip(), picture_serializer=_Skip()),
            )
        return self._last[1]


def chunk_id(source: str, doc_hash: str, crefs: list[str], text: str, part: int = 0) -> str:
    """Stable id from the source, the file's content hash, the items' crefs and the chunk text.

    The same file ingested again yields the same ids (so nothing is added); a
    changed file yields new ids; two files with equal content keep separate
    chunks, so editing or deleting one never removes the other's. ``part``
    numbers the pieces of a chunk too long to store (``rag_graphs.store.fields.split_text``).
    """
    key = "\x1f".join([source, doc_hash, ",".join(crefs), text, *([str(part)] if part else [])])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def document_hash(doc) -> str:
    """The converted file's content hash (Docling's binary hash), or a hash of its text."""
    if doc.origin:
        return str(doc.origin.binary_hash)
    return hashlib.sha256(doc.export_to_markdown().encode()).hexdigest()


@dataclass
class _Placed:
    """A table or picture with where it sits in the document."""

    item: DocItem
    headings: list[str]
    before: list[str]
    after: list[str]


def _placed_items(doc) -> Iterator[_Placed]:
    """Tables and pictures in reading order, with their heading path and the text around them."""
    headings: dict[int, str] = {}
    texts: list[str] = []  # body text seen so far
    pending: list[tuple[_Placed, int]] = []  # (item, len(texts) when seen) awaiting text after it
    caption_refs = {
        ref.cref for item in [*doc.tables, *doc.pictures] for ref in (item.captions or []) if ref.cref
    }
    for item, _ in doc.iterate_items(with_groups=False, traverse_pictures=False):
        if isinstance(item, TitleItem | SectionHeaderItem):
            level = item.level if isinstance(item, SectionHeaderItem) else 0
            headings = {k: v for k, v in headings.items() if k < level} | {level: item.text}
        elif isinstance(item, TableItem | PictureItem):
            placed = _Placed(item, [headings[k] for k in sorted(headings)], texts[-CONTEXT_ITEMS:], [])
            pending.append((placed, len(texts)))
        elif isinstance(item, TextItem) and item.self_ref not in caption_refs and item.text.strip():
            texts.append(item.text.strip())
    for placed, seen in pending:
        placed.after = texts[seen : seen + CONTEXT_ITEMS]
        yield placed


def _pages(items: list[DocItem]) -> list[int]:
    return sorted({p.page_no for item in items for p in (item.prov or [])})


def _table_pieces(markdown: str, prefix: str, tokenizer) -> list[str]:
    """The table under ``prefix``; split by rows (header repeated) when over the token budget."""
    whole = f"{prefix}{markdown}"
    if tokenizer.count_tokens(whole) <= tokenizer.get_max_tokens():
        return [whole]
    lines = markdown.splitlines()
    header, rows = lines[:2], lines[2:]
    pieces: list[str] = []
    current: list[str] = []
    for row in rows:
        candidate = "\n".join([*header, *current, row])
        if current and tokenizer.count_tokens(prefix + candidate) > tokenizer.get_max_tokens():
            pieces.append(prefix + "\n".join([*header, *current]))
            current = []
        current.append(row)
    if current:
        pieces.append(prefix + "\n".join([*header, *current]))
    return pieces


def chunk_document(
    doc, *, source: str, tokenizer, captioner=None, labels: dict[str, Any] | None = None
) -> list[Document]:
    """Split ``doc`` into text, table and picture chunks, each with full provenance.

    Metadata: ``chunk_id``, ``source``, ``doc_hash``, ``title``, ``kind``
    (text/table/picture), ``crefs`` (Docling self-refs of the items),
    ``page`` (first page or -1), ``pages``, ``headings``, ``caption`` (the
    document's own caption of a table/picture), ``content_hash``,
    ``chunk_index``, ``captioner`` (who described a picture; None otherwise),
    ``ingested_at``; plus the access ``labels`` (``tenant``, ``tags``) when given.

    Labels are part of ``doc_hash``, so re-ingesting a file with other labels
    replaces its chunks (the old ones are stale) instead of keeping the old labels.

    ``captioner`` describes pictures (``rag_graphs.ingestion.convert.captioning``); the default
    uses the document's own caption and surrounding text. ``tokenizer`` is best a
    ``counting.CountingTokenizer`` made once for many documents (``counting.counting``): the
    chunker counts the same texts many times over.
    """
    doc_hash = document_hash(doc)
    if labels:
        key = json.dumps(labels, sort_keys=True)
        doc_hash = hashlib.sha256(f"{doc_hash}\x1f{key}".encode()).hexdigest()[:32]
    now = datetime.now(UTC).isoformat(timespec="seconds")
    chunks: list[Document] = []

    def add(text: str, items: list[DocItem], kind: str, headings: list[str], **extra) -> None:
        for part, piece in enumerate(split_text(text)):
            add_one(piece, items, kind, headings, part, **extra)

    def add_one(text: str, items: list[DocItem], kind: str, headings: list[str], part: int, **extra) -> None:
        crefs = [item.self_ref for item in items]
        pages = _pages(items)
        cid = chunk_id(source, doc_hash, crefs, text, part)
        chunks.append(
            Document(
                id=cid,
                page_content=text,
                metadata={
                    "chunk_id": cid,
                    "source": source,
                    "doc_hash": doc_hash,
                    "title": doc.name,
                    "kind": kind,
                    "crefs": crefs,
                    "page": pages[0] if pages else -1,
                    "pages": pages,
                    "headings": headings,
                    "caption": extra.get("caption", ""),
                    "content_hash": hashlib.sha256(text.encode("utf-8")).hexdigest()[:16],
                    "chunk_index": len(chunks),
                    "captioner": extra.get("captioner"),
                    "ingested_at": now,
                    **(labels or {}),
                },
            )
        )

    chunker = Chunker(tokenizer=tokenizer, merge_peers=True, serializer_provider=TextOnly())
    for chunk in chunker.chunk(dl_doc=doc):
        text = chunker.contextualize(chunk=chunk).strip()
        meta: Any = chunk.meta  # a DocMeta: HybridChunker declares the base type
        items = [i for i in meta.doc_items if not isinstance(i, TableItem | PictureItem)]
        if text and items:
            add(text, items, "text", list(meta.headings or []))

    # A picture with neither pixels nor a caption (an <img> whose source was not fetched)
    # has nothing to describe: it gets no chunk. Pixels and captions are read once each.
    placed, inputs = [], []
    for p in _placed_items(doc):
        caption = p.item.caption_text(doc)  # type: ignore[attr-defined]  # tables and pictures
        if isinstance(p.item, PictureItem):
            image = p.item.get_image(doc)
            if image is None and not caption:
                continue
            inputs.append(PictureInput(image=image, caption=caption, context=" ".join([*p.before, *p.after])))
        placed.append((p, caption))
    captions = iter(caption_all(captioner or FallbackCaptioner(), inputs))
    for p, caption in placed:
        # A table or picture with no heading (a CSV, a slide) is at least placed in its document.
        prefix = "".join(f"{h}\n" for h in p.headings or [doc.name])
        if isinstance(p.item, TableItem):
            # Docling's Markdown export puts the caption above the table; we place it ourselves.
            rows = [line for line in p.item.export_to_markdown(doc=doc).splitlines() if line.startswith("|")]
            markdown = "\n".join(rows)
            if not markdown:
                continue
            for piece in _table_pieces(markdown, prefix + (f"{caption}\n" if caption else ""), tokenizer):
                add(piece, [p.item], "table", p.headings, caption=caption)
        else:
            described = next(captions)
            add(
                f"{prefix}Picture: {described.text}",
                [p.item],
                "picture",
                p.headings,
                caption=caption,
                captioner=described.captioner,
            )
    return chunks
