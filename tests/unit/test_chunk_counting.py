"""Chunking with each text's tokens counted once (issue 47, round 5): ``counting.CountingTokenizer``
remembers counts, ``counting.Chunker`` gives semchunk the longest token's length instead of a
vocabulary scan per long document, ``chunking.TextOnly`` builds one serializer per document; the
chunks (ids, texts, metadata) are what Docling's own HybridChunker and tokenizer give."""

from __future__ import annotations

from pathlib import Path

import pytest
from docling_core.transforms.chunker.hierarchical_chunker import ChunkingDocSerializer
from docling_core.transforms.chunker.hybrid_chunker import HybridChunker

import rag_graphs.ingestion.convert.chunking as chunking
from rag_graphs.ingestion.convert.chunking import TextOnly, chunk_document
from rag_graphs.ingestion.convert.counting import REMEMBERED, Chunker, CountingTokenizer, counting
from rag_graphs.ingestion.convert.entry import convert
from rag_graphs.store.embeddings import chunk_tokenizer

WORDS = "Kestrel dives deeper than Petrel off Korvik while the Velmora Institute records its range".split()


def _paragraph(n: int, words: int) -> str:
    return " ".join(WORDS[(n + i) % len(WORDS)] + ("." if i % 11 == 10 else "") for i in range(words))


def _files(folder: Path) -> list[Path]:
    """A short text, a text of many paragraphs (merged and split by items), one paragraph far over
    the budget (semchunk), and Markdown with headings and a table."""
    short = folder / "short.txt"
    short.write_text("Kestrel\n\nKestrel is a glider of the Velmora Institute.\n")
    many = folder / "many.txt"
    many.write_text("\n\n".join(_paragraph(n, 40 + 7 * n) for n in range(12)))
    long = folder / "long.txt"
    long.write_text("Long\n\n" + _paragraph(3, 900) + "\n")
    md = folder / "fleet.md"
    md.write_text(
        "# Fleet\n\n"
        + _paragraph(1, 60)
        + "\n\n## Kestrel\n\n"
        + _paragraph(2, 400)
        + "\n\n| Glider | Depth |\n|---|---|\n| Kestrel | 1000 |\n| Petrel | 200 |\n\n## Petrel\n\n"
        + _paragraph(5, 30)
        + "\n"
    )
    return [short, many, long, md]


def _rows(path: Path, tokenizer, chunker: type) -> list[tuple]:
    """The file's chunks as stored (id, text, metadata but the clock), chunked by ``chunker``."""
    kept = chunking.Chunker
    chunking.Chunker = chunker
    try:
        chunks = chunk_document(convert(path), source=str(path), tokenizer=tokenizer)
    finally:
        chunking.Chunker = kept
    return [
        (c.id, c.page_content, {k: v for k, v in c.metadata.items() if k != "ingested_at"}) for c in chunks
    ]


def test_chunks_are_those_of_doclings_chunker_and_tokenizer(tmp_path, monkeypatch):
    """Every file gives the same chunks with the counting tokenizer and ``Chunker`` as with the
    plain tokenizer, Docling's HybridChunker and a new serializer per request, twice over (the
    second time from remembered counts)."""
    files = _files(tmp_path)
    plain = chunk_tokenizer("embedded")
    fast = counting(chunk_tokenizer("embedded"))
    assert isinstance(fast, CountingTokenizer)
    with monkeypatch.context() as m:
        m.setattr(
            TextOnly,
            "get_serializer",
            lambda self, doc: ChunkingDocSerializer(
                doc=doc, table_serializer=chunking._Skip(), picture_serializer=chunking._Skip()
            ),
        )
        expected = [_rows(f, plain, HybridChunker) for f in files]
    assert len(expected[2]) > 2  # the long paragraph was split by semchunk
    assert len(expected[1]) > 1  # the paragraphs did not fit one chunk
    for _ in range(2):
        assert [_rows(f, fast, Chunker) for f in files] == expected


def test_each_distinct_text_is_tokenized_once_and_counts_are_the_tokenizers(monkeypatch):
    texts = ["a", "a\nb", "Kestrel dives deeper than Petrel.", "a", "Kestrel dives deeper than Petrel."]
    expected = [chunk_tokenizer("embedded").count_tokens(t) for t in texts]
    fast = counting(chunk_tokenizer("embedded"))
    calls: list[str] = []
    tokenize = fast.tokenizer.tokenize

    def counted(text: str, **kwargs) -> list[str]:
        calls.append(text)
        return tokenize(text, **kwargs)

    monkeypatch.setattr(fast.tokenizer, "tokenize", counted)
    assert [fast.count_tokens(t) for t in texts] == expected
    assert calls == ["a", "a\nb", "Kestrel dives deeper than Petrel."]
    assert fast.get_max_tokens() == chunk_tokenizer("embedded").get_max_tokens()


def test_the_memory_of_counts_is_bounded(monkeypatch):
    fast = counting(chunk_tokenizer("embedded"))
    monkeypatch.setattr(fast.tokenizer, "tokenize", lambda text, **kwargs: text.split())
    for n in range(REMEMBERED + 5):
        assert fast.count_tokens(f"w {n}") == 2
    assert len(fast._counts) <= REMEMBERED


def test_semchunk_gets_the_longest_token_from_one_scan_of_the_vocabulary(tmp_path, monkeypatch):
    """Two long documents: the vocabulary is read once (Docling's path reads it per long text),
    and the length given is the longest token's."""
    fast = counting(chunk_tokenizer("embedded"))
    vocab = fast.tokenizer.get_vocab()
    reads: list[int] = []

    def get_vocab() -> dict[str, int]:
        reads.append(1)
        return vocab

    monkeypatch.setattr(fast.tokenizer, "get_vocab", get_vocab)
    for n in range(2):
        path = tmp_path / f"long{n}.txt"
        path.write_text(f"Long {n}\n\n" + _paragraph(n, 900) + "\n")
        assert len(chunk_document(convert(path), source=str(path), tokenizer=fast)) > 2
    assert reads == [1]
    assert fast.longest_token() == max(len(t) for t in vocab)


def test_other_tokenizers_are_left_as_they_are():
    plain = chunk_tokenizer("embedded")
    fast = counting(plain)
    assert counting(fast) is fast  # already counting
    assert counting("not a tokenizer") == "not a tokenizer"


def test_one_serializer_per_document():
    from docling_core.types.doc import DoclingDocument

    provider = TextOnly()
    one, two = DoclingDocument(name="one"), DoclingDocument(name="two")
    first = provider.get_serializer(one)
    assert provider.get_serializer(one) is first
    other = provider.get_serializer(two)
    assert other is not first and other.doc is two


@pytest.mark.parametrize("size", [1, 3])
def test_a_table_chunk_goes_through_doclings_own_segmenting(size, monkeypatch):
    """``Chunker.segment`` hands a chunk holding a table to ``HybridChunker.segment``."""
    from docling_core.transforms.chunker import DocChunk, DocMeta
    from docling_core.types.doc import DoclingDocument, TableData

    doc = DoclingDocument(name="t")
    table = doc.add_table(data=TableData(num_rows=size, num_cols=1))
    seen: list[str] = []
    monkeypatch.setattr(
        HybridChunker, "segment", lambda self, chunk, length, ser: seen.append(chunk.text) or ["x"]
    )
    chunker = Chunker(tokenizer=counting(chunk_tokenizer("embedded")))
    chunk = DocChunk(text="| a |", meta=DocMeta(doc_items=[table]))
    assert chunker.segment(chunk, 10, None) == ["x"]
    assert seen == ["| a |"]


def test_long_documents_leave_nothing_in_semchunks_module_memo(tmp_path):
    """Docling's path files one counter per long text in ``semchunk``'s module dict, for good."""
    import semchunk.semchunk as module

    fast = counting(chunk_tokenizer("embedded"))
    before = len(module._memoized_token_counters)
    for n in range(3):
        path = tmp_path / f"long{n}.txt"
        path.write_text(f"Long {n}\n\n" + _paragraph(n, 900) + "\n")
        assert len(chunk_document(convert(path), source=str(path), tokenizer=fast)) > 2
    assert len(module._memoized_token_counters) == before
