"""Texts held in memory as ingest sources (``rag_graphs.ingestion.Text``, issue 48 item 3).

The indexing graph used to write its texts to temporary files itself, pass their names in a
``names`` map and patch the files' paths out of the error strings afterwards. A text is now a
source of its own: stored, reported and named in errors as ``text://<name>``.
"""

from __future__ import annotations

import pytest

from rag_graphs.ingestion import IngestOptions, Text, ingest

NOTE = "# Harbour notes\n\nThe harbour master keeps the keys of the north gate.\n"


def _sources(index) -> dict[str, list[str]]:
    stored: dict[str, list[str]] = {}
    for doc, _ in index.iter_chunks():
        stored.setdefault(doc.metadata["source"], []).append(doc.page_content)
    return stored


def test_a_text_is_stored_and_reported_under_its_name(index, tmp_path):
    (tmp_path / "gate.md").write_text("# Gate\n\nThe north gate opens at dawn.\n")
    report = ingest(
        [tmp_path / "gate.md", Text("harbour notes", NOTE), Text("plain", "Keys hang by the door.", "text")],
        index=index,
        options=IngestOptions(progress=False, timeout=None),
    )
    assert [f.path for f in report.files] == [
        str(tmp_path / "gate.md"),
        "text://harbour notes",
        "text://plain",
    ]
    assert not report.failed and all(f.chunks >= 1 for f in report.files), report.summary()
    stored = _sources(index)
    assert set(stored) == {str((tmp_path / "gate.md").resolve()), "text://harbour notes", "text://plain"}
    assert any("harbour master keeps the keys" in t for t in stored["text://harbour notes"])
    assert any("Keys hang by the door." in t for t in stored["text://plain"])


def test_the_same_name_again_replaces_the_texts_chunks(index):
    ingest([Text("notes", NOTE)], index=index, options=IngestOptions(progress=False, timeout=None))
    again = ingest([Text("notes", NOTE)], index=index, options=IngestOptions(progress=False, timeout=None))
    assert again.added == 0  # unchanged text: nothing stored twice
    ingest(
        [Text("notes", "# Harbour notes\n\nThe keys moved to the lighthouse.\n")],
        index=index,
        options=IngestOptions(progress=False),
    )
    [texts] = _sources(index).values()
    assert any("lighthouse" in t for t in texts) and not any("north gate" in t for t in texts)


def test_a_refused_text_is_named_by_its_name_not_a_temporary_file(index):
    report = ingest(
        [Text("big", "word " * 400)],
        index=index,
        options=IngestOptions(progress=False, timeout=None, max_file_bytes=100),
    )
    [failed] = report.files
    assert failed.path == "text://big" and failed.error and failed.error.startswith("text://big: "), failed
    assert "rag-graphs-" not in failed.error and index.count() == 0


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Text("", "x"), "Text.name: '' is empty"),
        (lambda: Text("text://", "x"), "Text.name: 'text://' is empty"),
        (lambda: Text("n", "  "), "Text.text of 'text://n' is empty"),
        (lambda: Text("n", "x", "pdf"), "Text.format of 'text://n': 'pdf' is not one of"),
    ],
)
def test_a_bad_text_is_refused_naming_the_field(make, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        make()


def test_two_texts_of_one_name_are_refused_before_anything_is_stored(index):
    with pytest.raises(ValueError, match="text://notes: given twice in one ingest"):
        ingest(
            [Text("notes", NOTE), Text("text://notes", "Other.")],
            index=index,
            options=IngestOptions(progress=False),
        )
    assert index.count() == 0
