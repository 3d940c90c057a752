"""Token counting for the chunker, done once per text (``CountingTokenizer``) and semchunk's
vocabulary scan done once per tokenizer (``Chunker``): the same chunks, less CPU.

Why: Docling's HybridChunker counts the same texts again and again while it splits and merges
(the delimiter probes ``a\\nb``, ``a``, ``b`` once per document, every item's text in the split
and again in the merge, every window's contextualised text), and each count is a full
``transformers`` tokenize call: 1,000 HotpotQA passages of one or two paragraphs made 11,290
counts of 3,171 distinct texts, 2.9 s of the 6.7 s of CPU their conversion and chunking took.
And for every text over the token budget Docling builds a semchunk chunker, which scans the
tokenizer's whole vocabulary (30,522 tokens, ``get_vocab`` plus a ``max`` over it) for the
longest token: ~40 ms per long document, 2 s for the 54 of those 1,000. Both are pure
functions of the text and the tokenizer, so remembering them cannot change a chunk: the counts
are the tokenizer's own, and semchunk is given the very ``max_token_chars`` it would compute.
"""

from __future__ import annotations

import threading
from typing import Any, cast

from docling_core.transforms.chunker.hybrid_chunker import HybridChunker
from docling_core.transforms.chunker.tokenizer.huggingface import HuggingFaceTokenizer
from docling_core.types.doc import TableItem
from pydantic import PrivateAttr

REMEMBERED = 8192
"""Counts kept per tokenizer before the memory is emptied (texts are chunk-sized: a few MB)."""


class CountingTokenizer(HuggingFaceTokenizer):
    """A ``HuggingFaceTokenizer`` that counts each distinct text once (up to ``REMEMBERED`` texts,
    then starts over) and knows its longest token's length after one scan of the vocabulary.

    Safe from several converter threads: a count is computed outside the lock (two threads may
    both count one text; they get the same number)."""

    _counts: dict[str, int] = PrivateAttr(default_factory=dict)
    _longest: int | None = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    def count_tokens(self, text: str) -> int:
        """The tokenizer's count of ``text``'s tokens (``HuggingFaceTokenizer.count_tokens``)."""
        found = self._counts.get(text)
        if found is not None:
            return found
        found = super().count_tokens(text)
        with self._lock:
            if len(self._counts) >= REMEMBERED:
                self._counts.clear()
            self._counts[text] = found
        return found

    def longest_token(self) -> int:
        """Characters in the vocabulary's longest token: what ``semchunk.chunkerify`` computes
        for its ``max_token_chars`` from ``get_vocab`` when not given it."""
        if self._longest is None:
            self._longest = max(len(token) for token in self.tokenizer.get_vocab())
        return self._longest


def counting(tokenizer: Any) -> Any:
    """``tokenizer`` made a ``CountingTokenizer`` when it is a plain ``HuggingFaceTokenizer`` (the
    same model and budget); any other tokenizer as it is."""
    if type(tokenizer) is HuggingFaceTokenizer:
        return CountingTokenizer(tokenizer=tokenizer.tokenizer, max_tokens=tokenizer.max_tokens)
    return tokenizer


class Chunker(HybridChunker):
    """Docling's HybridChunker, with semchunk given the longest token's length when its tokenizer
    is a ``CountingTokenizer`` (the value semchunk would find by scanning the vocabulary), and
    counting through it.

    Why not semchunk's own memo: ``chunkerify`` with ``memoize`` (Docling's path) files every new
    counter, with an unbounded cache of the texts it counted, in a module-level dict that is never
    emptied, and Docling builds one per long text: a long ingest's memory grew with every long
    document it read. The ``CountingTokenizer``'s memory is bounded (``REMEMBERED``)."""

    def segment(self, doc_chunk: Any, available_length: int, doc_serializer: Any) -> list[str]:
        """``HybridChunker.segment``: the same segments; tables go through Docling's own path."""
        if not isinstance(self.tokenizer, CountingTokenizer) or any(
            isinstance(item, TableItem) for item in doc_chunk.meta.doc_items
        ):
            return super().segment(doc_chunk, available_length, doc_serializer)
        import semchunk

        split = semchunk.chunkerify(
            self.tokenizer.count_tokens,  # the remembered counts: the tokenizer's, no special tokens
            chunk_size=available_length,
            max_token_chars=self.tokenizer.longest_token(),
            memoize=False,  # semchunk keeps each memoised counter in a module dict for good
        )
        return cast(list[str], split(doc_chunk.text))
