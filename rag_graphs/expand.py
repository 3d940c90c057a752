"""Neighbour expansion of the shared retrieve step: small chunks are matched, bigger context read.

``RagContext.expand`` is ``none`` or ``neighbours:N``: each kept hit brings the ``N`` chunks
before and after it in the same file version (``source`` and ``doc_hash``), in Docling reading
order (``chunk_index``, set at ingest), right after the hit, while the added text stays within
``expand_max_tokens`` per search (about four characters a token: no tokenizer is loaded for a
budget). Chunks already in the ranking are not added twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from langchain_core.documents import Document

from ingestion import ChunkIndex
from ingestion.store import quote

SPECS = "none, neighbours:<N>"
PREFIX = "neighbours:"


def check_expand(spec: str) -> str:
    """``spec`` normalised when it names a usable expansion, else ValueError naming the setting."""
    text = spec.strip().lower()
    if text == "none":
        return text
    if text.startswith(PREFIX) and text[len(PREFIX) :].isdigit() and int(text[len(PREFIX) :]) >= 1:
        return text
    raise ValueError(f"RagContext.expand={spec!r}: unknown expansion; use {SPECS}")


def tokens(text: str) -> int:
    """A tokenizer-free estimate (four characters a token) for the expansion budget."""
    return max(1, len(text) // 4)


@dataclass
class NeighbourExpander:
    """Adds each hit's reading-order neighbours from the store, within a token budget."""

    index: ChunkIndex
    window: int
    max_tokens: int

    def expand(self, ranking: list[Document]) -> tuple[list[Document], list[str]]:
        """The ranking with neighbours after their hits, and the ids added."""
        seen = {str(d.id) for d in ranking}
        out: list[Document] = []
        added: list[str] = []
        budget = self.max_tokens
        for doc in ranking:
            out.append(doc)
            for near in self._neighbours(doc):
                cost = tokens(near.page_content)
                if str(near.id) in seen or cost > budget:
                    continue
                seen.add(str(near.id))
                budget -= cost
                added.append(str(near.id))
                out.append(
                    Document(
                        id=near.id,
                        page_content=near.page_content,
                        metadata={**near.metadata, "expanded_from": str(doc.id)},
                    )
                )
        return out, added

    def _neighbours(self, doc: Document) -> list[Document]:
        meta = doc.metadata
        at = meta.get("chunk_index")
        if not isinstance(at, int) or "source" not in meta or "doc_hash" not in meta:
            return []
        wanted = [i for i in range(at - self.window, at + self.window + 1) if i != at and i >= 0]
        expr = (
            f"source == {quote(meta['source'])} and doc_hash == {quote(meta['doc_hash'])}"
            f" and chunk_index in [{', '.join(map(str, wanted))}]"
        )
        found = self.index.where(expr, limit=len(wanted))
        return sorted(found, key=lambda d: abs(d.metadata.get("chunk_index", at) - at))


def expander_for(spec: str, index: ChunkIndex, max_tokens: int) -> NeighbourExpander | None:
    """The expansion ``spec`` names over ``index`` (``None`` for ``none``)."""
    spec = check_expand(spec)
    if spec == "none":
        return None
    return NeighbourExpander(index, int(spec[len(PREFIX) :]), max_tokens)
