"""Docling ingestion of the text formats: chunks, provenance, idempotence, bad files."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.ingestion.convert.chunking import chunk_document
from rag_graphs.ingestion.convert.entry import UnsupportedFormatError, convert, discover
from rag_graphs.store.embeddings import chunk_tokenizer


def _ingest(paths, index, **kw):
    return ingest(paths, index=index, options=IngestOptions(progress=False, **kw))


def test_demo_corpus_ingests_every_file_with_provenance(demo_corpus, index):
    report = _ingest([demo_corpus], index)
    assert not report.failed, report.summary()
    assert {Path(f.path).suffix for f in report.ok} == {".md", ".html", ".txt", ".csv"}
    assert report.added == report.chunks == report.total_chunks_in_store > 5
    stored = index.search("Ilsa Brandt was born in Korvik", k=20, mode="hybrid")
    sources = {Path(d.metadata["source"]).name for d, _ in stored}
    assert "ilsa_brandt.html" in sources
    doc = next(
        d
        for d, _ in stored
        if d.metadata["source"].endswith("ilsa_brandt.html") and "Korvik" in d.page_content
    )
    meta = doc.metadata
    assert meta["kind"] == "text" and meta["crefs"][0].startswith("#/texts/")
    assert meta["headings"] and "Ilsa Brandt" in meta["headings"][0]
    assert len(meta["doc_hash"]) > 8 and len(meta["content_hash"]) == 16 and meta["ingested_at"]
    table = next(
        d for d, _ in index.search("Asterra Lunmar capital", k=20) if d.metadata["source"].endswith(".csv")
    )
    assert table.metadata["kind"] == "table" and "Lunmar" in table.page_content


def test_reingesting_adds_nothing(demo_corpus, index):
    first = _ingest([demo_corpus], index)
    second = _ingest([demo_corpus], index)
    assert second.added == 0 and second.chunks == first.chunks
    assert second.total_chunks_in_store == first.total_chunks_in_store


def test_changed_file_replaces_its_old_chunks_only(tmp_path, index):
    tmp_path = tmp_path / "docs"
    tmp_path.mkdir()
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    a.write_text("# A\n\nThe first version says the sky is green.\n")
    b.write_text("# B\n\nAnother file about rivers.\n")
    _ingest([tmp_path], index)
    a.write_text("# A\n\nThe second version says the sky is blue.\n")
    report = _ingest([tmp_path], index)
    assert report.files[0].removed_stale >= 1
    texts = [d.page_content for d, _ in index.search("sky", k=10)]
    assert any("blue" in t for t in texts) and not any("green" in t for t in texts)
    assert any("rivers" in t for t in texts)


def test_bad_files_are_reported_by_name_and_good_ones_still_ingested(tmp_path, demo_corpus, index):
    tmp_path = tmp_path / "docs"
    tmp_path.mkdir()
    shutil.copy(demo_corpus / "korvik.txt", tmp_path / "good.txt")
    (tmp_path / "empty.md").write_bytes(b"")
    (tmp_path / "binary.bin").write_bytes(b"\x00\x01\x02")
    report = _ingest([tmp_path], index)
    errors = {Path(f.path).name: f.error for f in report.failed}
    assert set(errors) == {"empty.md", "binary.bin"}
    assert "empty.md" in errors["empty.md"] and "empty" in errors["empty.md"]
    assert "binary.bin" in errors["binary.bin"] and "unsupported" in errors["binary.bin"]
    assert [Path(f.path).name for f in report.ok] == ["good.txt"]
    assert report.total_chunks_in_store == report.added > 0
    assert "FAILED" in report.summary()


def test_missing_path_fails_before_anything_is_written(tmp_path, index):
    with pytest.raises(FileNotFoundError, match="nope"):
        _ingest([tmp_path / "nope"], index)
    assert index.count() == 0


def test_discover_skips_hidden_and_excluded_files(tmp_path):
    (tmp_path / ".hidden.md").write_text("x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "keep.md").write_text("x")
    (tmp_path / "sub" / "drop.html").write_text("x")
    found = [p.name for p in discover([tmp_path], exclude=["*.html"])]
    assert found == ["keep.md"]


def test_unsupported_suffix_error_names_the_file(tmp_path):
    f = tmp_path / "deck.pptx"
    f.write_bytes(b"PK")
    with pytest.raises(UnsupportedFormatError, match="deck.pptx"):
        convert(f)


def test_chunks_fit_the_embedding_window_and_ids_are_stable(tmp_path):
    f = tmp_path / "long.md"
    f.write_text("# Long\n\n" + " ".join(f"Sentence number {i} talks about topic {i}." for i in range(400)))
    tokenizer = chunk_tokenizer("embedded")
    chunks = chunk_document(convert(f), source=str(f), tokenizer=tokenizer)
    again = chunk_document(convert(f), source=str(f), tokenizer=tokenizer)
    assert len(chunks) > 3
    assert all(tokenizer.count_tokens(c.page_content) <= tokenizer.get_max_tokens() for c in chunks)
    assert [c.id for c in chunks] == [c.id for c in again]
    assert len({c.id for c in chunks}) == len(chunks)


def test_files_with_equal_content_keep_separate_chunks(tmp_path, index):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Same\n\nIdentical content in two files.\n")
    (docs / "b.md").write_text("# Same\n\nIdentical content in two files.\n")
    first = _ingest([docs], index)
    assert [f.added for f in first.files] == [1, 1]
    (docs / "a.md").write_text("# Same\n\nNow a.md says something else.\n")
    _ingest([docs], index)
    hits = index.search("Identical content in two files.", k=10)
    assert {Path(d.metadata["source"]).name for d, _ in hits if "Identical" in d.page_content} == {"b.md"}


def test_plain_text_is_kept_verbatim_not_parsed_as_markdown(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("# not a heading\n\nSome *stars* and <b>tags</b>.\nSame paragraph.\n")
    chunks = chunk_document(convert(f), source=str(f), tokenizer=chunk_tokenizer("embedded"))
    text = "\n".join(c.page_content for c in chunks)
    assert "# not a heading" in text and "*stars* and <b>tags</b>. Same paragraph." in text


def test_invalid_utf8_text_is_reported_by_name(tmp_path):
    f = tmp_path / "latin1.txt"
    f.write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(ValueError, match="latin1.txt: not UTF-8"):
        convert(f)


def test_tables_are_stored_as_markdown_with_their_header(demo_corpus, tmp_path):
    f = demo_corpus / "provinces.csv"
    (chunk,) = chunk_document(convert(f), source=str(f), tokenizer=chunk_tokenizer("embedded"))
    assert chunk.metadata["kind"] == "table"
    title, *lines = chunk.page_content.splitlines()  # a CSV has no heading: the document name stands in
    assert title == "provinces"
    assert lines[0].split("|")[1].strip() == "Province" and set(lines[1]) <= set("|- ")
    assert any("Asterra" in line and "Lunmar" in line for line in lines[2:])


def test_discover_takes_globs_and_include_patterns(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.md").write_text("x")
    (tmp_path / "a" / "two.pdf").write_bytes(b"%PDF-")
    (tmp_path / "b.md").write_text("x")
    assert [p.name for p in discover([tmp_path], include=["*.md"])] == ["one.md", "b.md"]
    assert [p.name for p in discover([tmp_path / "**" / "*.pdf"])] == ["two.pdf"]
    assert [p.name for p in discover([tmp_path], include=["a/*"], exclude=["*.pdf"])] == ["one.md"]
    with pytest.raises(FileNotFoundError, match=r"no file matches .*\*\.docx"):
        list(discover([tmp_path / "*.docx"]))


def test_ingest_options_object_is_checked_when_built_and_replace_keeps_the_rest(tmp_path, index):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "keep.md").write_text("# Keep\n\nThe glider surfaced at noon.\n")
    (docs / "skip.html").write_text("<p>Skipped by the include pattern.</p>")
    options = IngestOptions(include="*.md", tenant="acme", tags=["public"], timeout=None, progress=False)
    assert options.include == ("*.md",) and options.tags == ("public",)  # one pattern, not its letters
    report = ingest([docs], index=index, options=options)
    assert [Path(f.path).name for f in report.ok] == ["keep.md"] and not report.failed
    (stored,) = [d for d, _ in index.search("glider")]
    assert stored.metadata["tenant"] == "acme" and stored.metadata["tags"] == ["public"]
    # One field replaced keeps the rest (and is normalised as when built).
    again = ingest([docs], index=index, options=replace(options, include=["*.html"]))
    assert [Path(f.path).name for f in again.ok] == ["skip.html"]
    assert replace(options, include=["*.html"]).include == ("*.html",)


def test_ingest_names_unknown_settings_and_checks_options_when_built(tmp_path, index):
    with pytest.raises(
        TypeError, match=r"IngestOptions: unknown setting 'captoiner' \(did you mean 'captioner'\?\)"
    ):
        IngestOptions(captoiner="fallback")
    with pytest.raises(TypeError, match=r"unknown settings 'bogus', 'other'; its settings are include, "):
        IngestOptions(bogus=1, other=2)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'tenant'"):  # the old keywords
        ingest([tmp_path], index=index, tenant="acme")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"ingest: options=\{'tenant': 'acme'\}: expected IngestOptions"):
        ingest([tmp_path], index=index, options={"tenant": "acme"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ingest: tenant='': expected a non-empty string"):
        IngestOptions(tenant="")
    with pytest.raises(ValueError, match="ingest: tags=.*expected non-empty strings"):
        IngestOptions(tags=["ok", ""])
    assert index.count() == 0
