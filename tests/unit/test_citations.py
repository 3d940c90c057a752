from __future__ import annotations

from langchain_core.documents import Document

from rag_graphs.text.citations import extract_citations, format_context, label


def _doc(i: int, **meta) -> Document:
    base = {"source": f"/data/doc{i}.md", "kind": "text", "page": -1, "crefs": [f"#/texts/{i}"]}
    return Document(id=f"id{i}", page_content=f"passage {i}", metadata={**base, **meta})


DOCS = [_doc(1), _doc(2, kind="table", page=4), _doc(3)]


def test_markers_map_to_the_cited_documents_in_order_of_first_use():
    cites = extract_citations("Korvik [2]. It is in Asterra [1, 2] and [3].", DOCS)
    assert [c["chunk_id"] for c in cites] == ["id2", "id1", "id3"]
    assert all(c["explicit"] for c in cites)
    assert cites[0] == {
        "marker": 2,
        "chunk_id": "id2",
        "source": "/data/doc2.md",
        "cref": "#/texts/2",
        "kind": "table",
        "page": 4,
        "quote": "passage 2",
        "explicit": True,
    }


def test_out_of_range_markers_are_ignored_and_the_shown_passages_are_cited_as_inferred():
    cites = extract_citations("See [7] and [0].", DOCS)
    assert {c["chunk_id"] for c in cites} == {"id1", "id2", "id3"}
    assert not any(c["explicit"] for c in cites)


def test_no_documents_means_no_citations():
    assert extract_citations("I do not know [1].", []) == []


def test_context_is_numbered_and_fenced_as_data():
    text = format_context(DOCS)
    assert text.startswith("[1]\n<passage>\n(doc1.md)\npassage 1\n</passage>")
    assert "[2]\n<passage>\n(doc2.md, p. 4, table)\n" in text
    assert format_context([]) == "(no passages were found)"


def test_label_shows_page_and_kind_only_when_known():
    assert label(_doc(1)) == "doc1.md"
    assert label(_doc(1, page=3, kind="picture")) == "doc1.md, p. 3, picture"
