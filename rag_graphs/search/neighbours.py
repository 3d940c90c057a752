"""Neighbour and section expansion of the shared retrieve step: small chunks are matched,
bigger context read.

``RagContext.expand`` is ``none``, ``neighbours:N`` or ``section``. ``neighbours:N``: each kept
hit brings the ``N`` chunks before and after it in the same file version (``source`` and
``doc_hash``), in Docling reading order (``chunk_index``, set at ingest). ``section``: each hit
brings the other chunks of its section, the chunks of the same file version whose Docling
heading path (``headings``, stored with every chunk) is the hit's own, nearest first while the
budget lasts, placed in reading order. Either way the added chunks follow their hit and the added
text stays within ``expand_max_tokens`` per search (about four characters a token: no tokenizer
is loaded for a budget). Chunks already in the ranking are not added twice.

Expansion reads the store again, so it applies the run's whole filter
(``rag_graphs.store.filters.search_expr``: ``search_filter`` and the access fields) to every
chunk it adds, exactly as the search did: a chunk the search could not return cannot come in
beside a hit either. ``N`` is at most
``rag_graphs.config.specs.MAX_WINDOW``: each hit asks the store for ``2N`` positions, and a window
of millions built a list of that size before any budget applied.
"""

from __future__ import annotations

from dataclasses import dataclass

from langchain_core.documents import Document

from rag_graphs.config.specs import NEIGHBOURS, SECTION, all_of, check_expand
from rag_graphs.store import ChunkIndex
from rag_graphs.store.filters import quote

SECTION_LIMIT = 1000
"""Most chunks one section lookup reads (Milvus caps a query's limit; a section is far smaller)."""


def tokens(text: str) -> int:
    """A tokenizer-free estimate (four characters a token) for the expansion budget."""
    return max(1, len(text) // 4)


@dataclass
class NeighbourExpander:
    """Adds each hit's reading-order neighbours from the store, within a token budget."""

    index: ChunkIndex
    window: int
    max_tokens: int
    expr: str | None = None
    """The run's filter (``rag_graphs.store.filters.search_expr``): every added chunk must satisfy it too."""
    reading_order = False  # the added chunks of a hit, nearest first (True: sorted by chunk_index)

    def expand(self, ranking: list[Document]) -> tuple[list[Document], list[str]]:
        """The ranking with neighbours after their hits, and the ids added."""
        seen = {str(d.id) for d in ranking}
        out: list[Document] = []
        added: list[str] = []
        budget = self.max_tokens
        for doc in ranking:
            out.append(doc)
            picked: list[Document] = []
            for near in self._neighbours(doc):
                cost = tokens(near.page_content)
                if str(near.id) in seen or cost > budget:
                    continue
                seen.add(str(near.id))
                budget -= cost
                picked.append(near)
            if self.reading_order:
                picked.sort(key=lambda d: d.metadata.get("chunk_index", 0))
            for near in picked:
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
        found = self.index.where(all_of(self.expr, expr) or expr, limit=len(wanted))
        return sorted(found, key=lambda d: abs(d.metadata.get("chunk_index", at) - at))


@dataclass
class SectionExpander(NeighbourExpander):
    """Adds the other chunks of each hit's section (same file version, same heading path).

    ``headings`` is a JSON list in Milvus's dynamic field, which has no list equality: the
    store is asked for the chunks whose heading list has the same length and contains every
    heading of the hit's (``json_contains_all``, ``array_length``), and the exact, ordered path
    is checked here (``["A", "B"]`` and ``["B", "A"]`` are different sections). A chunk with no
    headings belongs to its file's untitled part (text before the first heading, a CSV, a
    passage corpus row): its section is the rest of that part.
    """

    reading_order = True

    def _neighbours(self, doc: Document) -> list[Document]:
        meta = doc.metadata
        at, path = meta.get("chunk_index"), meta.get("headings")
        if not (isinstance(at, int) and isinstance(path, list)) or not {"source", "doc_hash"} <= set(meta):
            return []
        expr = (
            f"source == {quote(meta['source'])} and doc_hash == {quote(meta['doc_hash'])}"
            f" and array_length(headings) == {len(path)}"
        )
        if path:
            expr += f" and json_contains_all(headings, [{', '.join(quote(str(h)) for h in path)}])"
        found = [
            d
            for d in self.index.where(all_of(self.expr, expr) or expr, limit=SECTION_LIMIT)
            if d.metadata.get("headings") == path and str(d.id) != str(doc.id)
        ]
        place = [d.metadata.get("chunk_index", at) for d in found]
        return [d for _, d in sorted(zip(place, found, strict=True), key=lambda p: (abs(p[0] - at), p[0]))]


def expander_for(
    spec: str, index: ChunkIndex, max_tokens: int, *, expr: str | None = None
) -> NeighbourExpander | None:
    """The expansion ``spec`` names over ``index`` (``None`` for ``none``), adding only chunks
    that satisfy ``expr`` (the run's ``search_expr(ctx)``)."""
    spec = check_expand(spec)
    if spec == "none":
        return None
    if spec == SECTION:
        return SectionExpander(index, 0, max_tokens, expr)
    return NeighbourExpander(index, int(spec[len(NEIGHBOURS) :]), max_tokens, expr)
