"""Ingesting a corpus of hostile and broken files (``tests/hostile_corpus.py``).

No crash, no hang (a per-file timeout in a worker process), a clear error per bad
file naming it, every good file ingested, nothing stored from a failed file,
nothing read from ``file://`` references and nothing fetched from URLs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.ingestion.convert.entry import ConvertOptions, convert
from tests.entities import capitalised
from tests.hostile_corpus import HANG, _office_zip, make_hostile_corpus

TIMEOUT = 15.0  # seconds per file here: the slowest file takes ~2 s in the worker, the hanging one an hour
MAX_FILE_BYTES = 8_000_000
CANARY = "CANARY-5c1d-do-not-index"


def _ingest(folder: Path, index):
    """Ingest with a regex entity extractor: spaCy's NER over the corpus's ~4,800 junk chunks was
    three quarters of this file's time, and reading entities is not what these files test."""
    return ingest(
        [folder],
        index=index,
        options=IngestOptions(
            progress=False, max_file_bytes=MAX_FILE_BYTES, timeout=TIMEOUT, entities=capitalised
        ),
    )


@pytest.mark.timeout(900)  # a hang bound: ~3 min idle, far more on a loaded CI machine
def test_hostile_corpus_fails_file_by_file_and_stores_every_good_file(tmp_path, index, standin):
    url, requests = standin
    canary = tmp_path / "canary.txt"
    canary.write_text(f"{CANARY}\nroot:x:0:0:root:/root:/bin/bash\n")
    folder = (tmp_path / "corpus").resolve()
    expect = make_hostile_corpus(folder, remote=url, canary=canary, max_file_bytes=MAX_FILE_BYTES)
    bad = {name for name, e in expect.items() if e.status == "error"}
    good = set(expect) - bad
    assert len(bad) >= 20 and len(good) >= 10
    (folder / "passwd link.txt").symlink_to(canary)  # a link out of the folder: not followed

    report = _ingest(folder, index)
    print(
        f"\nhostile corpus: {len(report.files)} files tried, {len(report.ok)} ingested, "
        f"{len(report.failed)} failed with their expected error\n{report.summary()}"
    )

    results = {Path(r.path).relative_to(folder).as_posix(): r for r in report.files}
    assert set(results) == set(expect)  # every file tried once, symlinks that lead nowhere included
    assert "passwd link.txt" not in results  # the link out of the folder was not followed
    for name in sorted(bad):
        error = results[name].error
        assert error and error.startswith(f"{folder / name}: "), (name, error)
        assert re.search(expect[name].error or "", error), (name, error)
        assert results[name].chunks == results[name].added == 0
    assert f"{folder / HANG}: conversion timed out after {TIMEOUT:g} s" == results[HANG].error

    chunks = [doc for doc, _ in index.iter_chunks()]
    by_source: dict[str, list[str]] = {}
    for doc in chunks:
        by_source.setdefault(doc.metadata["source"], []).append(doc.page_content)
    # Exactly the good files are stored, each with every chunk it reported: none half-written.
    assert set(by_source) == {str(folder / name) for name in good}
    for name in sorted(good):
        result, stored = results[name], by_source[str(folder / name)]
        assert result.error is None and result.added == len(stored) >= 1, (name, result)
        wanted = expect[name].contains
        assert wanted is None or any(wanted in text for text in stored), (name, stored[:3])
    assert report.total_chunks_in_store == report.added == len(chunks)

    # Nothing read from file:///etc/passwd or the canary file, nothing fetched.
    assert not any("root:" in text or CANARY in text for text in map(str, chunks))
    assert requests == []

    # Again, without the hanging file (its timeout: the first pass and the hanging-file test below):
    # nothing stored twice, every other bad file fails again with the same error.
    (folder / HANG).unlink()
    again = _ingest(folder, index)
    assert again.added == 0 and again.total_chunks_in_store == report.total_chunks_in_store
    failed_again = [(r.path, r.error) for r in report.failed if r.path != str(folder / HANG)]
    assert [(r.path, r.error) for r in again.failed] == failed_again and len(failed_again) >= 19
    assert requests == []


@pytest.mark.timeout(600)  # a hang bound, not a speed target
def test_a_hanging_file_is_stopped_and_the_worker_replaced(tmp_path):
    hang = tmp_path / HANG
    hang.write_text("[a](" * 100_000)
    with pytest.raises(ValueError, match=re.escape(f"{hang}: conversion timed out after 2 s")):
        convert(hang, ConvertOptions(timeout=2))
    good = tmp_path / "after.md"
    good.write_text("# After\n\nThe next file converts in a fresh worker.\n")
    # The document comes back from the worker whole: the same as converted in this process.
    assert convert(good).export_to_dict() == convert(good, ConvertOptions(timeout=None)).export_to_dict()


def test_office_parts_unpacking_past_the_limit_are_refused_before_conversion(tmp_path):
    deck = tmp_path / "many parts.pptx"
    deck.write_bytes(_office_zip({f"ppt/slides/slide{i}.xml": " " * 30_000 for i in range(4)}))
    match = (
        r"many parts\.pptx: refused as a zip bomb: its parts unpack to 120\.\d kB, over the 100\.0 kB limit"
    )
    with pytest.raises(ValueError, match=match):
        convert(deck, ConvertOptions(max_file_bytes=5_000, timeout=None))


def test_a_run_without_spaces_is_split_to_fit_the_store(tmp_path, index):
    """One tokenizer "token" can be 200 KB long; Milvus holds 65,535 bytes of text per chunk."""
    folder = tmp_path / "long"
    folder.mkdir()
    (folder / "blob.md").write_text("# Blob\n\n" + "a" * 200_000 + "\n")
    report = ingest([folder], index=index, options=IngestOptions(progress=False, timeout=None))
    assert not report.failed, report.summary()
    stored = [doc.page_content for doc, _ in index.iter_chunks()]
    assert len(stored) >= 13 and max(map(len, stored)) <= 16_000
    assert sum(text.count("a") for text in stored) >= 200_000
