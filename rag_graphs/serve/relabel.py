"""Relabel a stored source: store its chunks again under new access labels, drop the old ones.

The CLI relabels by ingesting a file again with other ``--tenant``/``--tag`` (labels are part of a
file version's ``doc_hash``, so the new version replaces the old). A served caller may not have
the file (a raw text, a URL since changed, a file on another machine), so this takes the stored
chunks themselves: each is copied with the new labels into a new version of the source (a new
``doc_hash``, new chunk ids) and stored through ingestion's own write path
(``rag_graphs.ingestion.storing.store_group``), which removes the old version after the new one
is in and keeps what is derived from chunks current (the RAPTOR tree drops the old copies,
sentence rows follow; entity rows get the new chunk ids first). The file's ingest record no
longer matches, so its next ingest converts it again rather than trusting old labels.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document

from rag_graphs.entity_graph.build import add_entities
from rag_graphs.entity_graph.rows import has_graph
from rag_graphs.ingestion.report import FileResult
from rag_graphs.ingestion.storing import store_group
from rag_graphs.serve.requests import IndexRequestError
from rag_graphs.store.collection import QUERY_LIMIT
from rag_graphs.store.fields import ENTITIES_FIELD, TAGS_FIELD, TENANT_FIELD
from rag_graphs.store.filters import quote

if TYPE_CHECKING:
    from rag_graphs.store import ChunkIndex


def stored_chunks(index: ChunkIndex, source: str) -> list[Document]:
    """Every stored chunk of ``source``, in the order ingest stored them.

    Raises:
        IndexRequestError: the source holds more chunks than one query returns (ingest the
            file again with the new labels instead).
    """
    chunks = index.where(f"source == {quote(source)}", limit=QUERY_LIMIT)
    if len(chunks) >= QUERY_LIMIT:
        raise IndexRequestError(
            f"IndexRequest.relabel: {source!r} has {QUERY_LIMIT} chunks or more: ingest it again "
            "with the new tenant and tags instead"
        )
    return sorted(chunks, key=lambda c: int(c.metadata.get("chunk_index") or 0))


def relabelled(chunks: list[Document], labels: dict[str, Any]) -> list[Document]:
    """Copies of one source's ``chunks`` under ``labels`` (``tenant``, ``tags``), as a new version
    of the source: its ``doc_hash`` and chunk ids derive from the old ones and the new labels."""
    if not chunks:
        return []
    stored = access_labels(labels)
    key = json.dumps(stored, sort_keys=True)
    old_hash = str(chunks[0].metadata.get("doc_hash") or "")
    doc_hash = _hash(old_hash, "relabel", key)
    copies = []
    for chunk in chunks:
        meta = {k: v for k, v in chunk.metadata.items() if k not in (TENANT_FIELD, TAGS_FIELD)}
        cid = _hash(str(chunk.metadata.get("chunk_id") or chunk.id), doc_hash)
        meta |= {"chunk_id": cid, "doc_hash": doc_hash, **stored}
        copies.append(Document(id=cid, page_content=chunk.page_content, metadata=meta))
    return copies


def access_labels(labels: dict[str, Any]) -> dict[str, Any]:
    """``labels`` as chunks store them: no tenant field when there is none, no empty tag list."""
    out: dict[str, Any] = {}
    if labels.get("tenant") is not None:
        out[TENANT_FIELD] = labels["tenant"]
    if labels.get("tags"):
        out[TAGS_FIELD] = sorted(set(labels["tags"]))
    return out


def has_labels(chunks: list[Document], labels: dict[str, Any]) -> bool:
    """True when every chunk carries exactly ``labels`` already (nothing to do)."""
    stored = access_labels(labels)
    wanted = (stored.get(TENANT_FIELD), stored.get(TAGS_FIELD, []))
    return all(
        (c.metadata.get(TENANT_FIELD), sorted(c.metadata.get(TAGS_FIELD) or [])) == wanted for c in chunks
    )


def relabel_source(index: ChunkIndex, source: str, labels: dict[str, Any]) -> int:
    """Store ``source``'s chunks again under ``labels``; return how many chunks it has.

    Raises:
        RuntimeError: the new version could not be stored (the old one is kept).
    """
    chunks = stored_chunks(index, source)
    if not chunks or has_labels(chunks, labels):
        return len(chunks)
    copies = relabelled(chunks, labels)
    if has_graph(index):  # the copies name the same entities: their rows list the new ids first
        add_entities(index, [c for c in copies if c.metadata.get(ENTITIES_FIELD)])
    result = FileResult(path=source)
    store_group(index, [(result, copies)])
    if result.error is not None:
        raise RuntimeError(f"relabel {source!r}: {result.error}")
    index.flush()
    return len(copies)


def _hash(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]
