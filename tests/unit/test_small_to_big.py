"""Small-to-big retrieval: sentence rows with their parent ids, searched instead of the chunks;
the parents come back once each, in the order of their best sentence; a collection without
sentence rows is refused naming the setting; the build resumes."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from pydantic import ValidationError

from rag_graphs.config.context import RagContext
from rag_graphs.methods.naive import graph
from rag_graphs.search.cache import SEARCHES
from rag_graphs.search.retrieval import search
from rag_graphs.store import ChunkIndex
from rag_graphs.store.sentences import (
    build_sentences,
    children_of,
    has_sentences,
    search_parents,
    split_sentences,
)

LONG = (
    "Ilsa Brandt was born in Korvik in 1921. She studied glass chemistry at Velmora. "
    "Her later work concerned harbour granite."
)
OTHER = "Osric Vane built mills. He never left Lunmar. The mills still turn on the river Ost."


def chunk(cid: str, text: str, **meta) -> Document:
    return Document(id=cid, page_content=text, metadata={"chunk_id": cid, "source": f"{cid}.txt", **meta})


@pytest.fixture
def small(index: ChunkIndex) -> ChunkIndex:
    index.add([chunk("a", LONG, tenant="acme"), chunk("b", OTHER, tenant="other")])
    return index


def test_sentences_split_and_short_pieces_join() -> None:
    assert split_sentences(LONG) == [
        "Ilsa Brandt was born in Korvik in 1921.",
        "She studied glass chemistry at Velmora.",
        "Her later work concerned harbour granite.",
    ]
    assert split_sentences("Intro\nA sentence long enough to stand.") == [
        "Intro A sentence long enough to stand."
    ]


def test_build_stores_children_with_parent_ids_and_resumes(small: ChunkIndex) -> None:
    assert not has_sentences(small)
    report = build_sentences(small)
    assert (report.chunks, report.sentences, report.added) == (2, 6, 6)
    kids = children_of(small).where('parent_id == "a"')
    assert sorted(d.metadata["sentence_index"] for d in kids) == [0, 1, 2]
    assert all(d.metadata["tenant"] == "acme" for d in kids)  # labels travel, so filters apply
    again = build_sentences(small)
    assert again.added == 0 and again.sentences == 6
    assert has_sentences(small)


def test_a_sentence_finds_its_parent_once_in_best_sentence_order(small: ChunkIndex) -> None:
    build_sentences(small)
    # the fake embeddings match exact text: the query is one sentence of chunk b
    [hits] = search_parents(small, ["He never left Lunmar."], k=2, mode="dense", expr=None)
    assert [str(d.id) for d, _ in hits] == ["b", "a"]  # b's sentence is the best hit, each once
    parent, score = hits[0]
    assert parent.page_content == OTHER and parent.metadata["matched_sentence"] == "He never left Lunmar."
    assert score == pytest.approx(1.0, abs=1e-3)
    [only] = search_parents(small, ["He never left Lunmar."], k=2, mode="dense", expr='tenant == "acme"')
    assert [str(d.id) for d, _ in only] == ["a"]  # the access filter reaches the children


def test_the_setting_routes_search_and_graphs_through_sentences(small: ChunkIndex, make_context) -> None:
    build_sentences(small)
    SEARCHES.clear()
    (hit,) = search(
        make_context(search_unit="sentence", search_cache=0), "She studied glass chemistry at Velmora.", k=1
    )
    assert hit.id == "a" and hit.metadata["matched_sentence"].startswith("She studied")
    out = graph.invoke(
        {"question": "He never left Lunmar."}, context=make_context("Lunmar.", k=1, search_unit="sentence")
    )
    assert [d.id for d in out["documents"]] == ["b"]
    (step,) = [s for s in out["steps"] if s["kind"] == "retrieve"]
    assert step["text"] == (
        "hybrid search (search_mode=auto: search_unit=sentence, which graph search does not use); "
        "small-to-big, best sentence: He never left Lunmar."
    )


def test_no_sentence_rows_is_refused_naming_the_setting(small: ChunkIndex, make_context) -> None:
    with pytest.raises(ValueError, match=r"RagContext.search_unit='sentence'.*no sentence rows.*--children"):
        search(make_context(search_unit="sentence", search_cache=0), "anything", k=1)
    with pytest.raises(ValidationError, match="search_unit"):
        RagContext(search_unit="paragraph")  # type: ignore[arg-type]


def test_a_deleted_parent_is_skipped(small: ChunkIndex) -> None:
    build_sentences(small)
    small.delete_source("b.txt")
    [hits] = search_parents(small, ["He never left Lunmar."], k=2, mode="dense", expr=None)
    assert [str(d.id) for d, _ in hits] == ["a"]


def test_ingest_keeps_the_sentences_of_a_collection_that_has_them(index: ChunkIndex, tmp_path) -> None:
    from rag_graphs.ingestion import IngestOptions, ingest

    def put(text: str) -> None:
        note.write_text(text)
        ingest([note], index=index, options=IngestOptions(progress=False))

    note = tmp_path / "note.txt"
    put(LONG)
    assert not has_sentences(index)  # none built: ingest adds none
    build_sentences(index)
    put(OTHER)  # a changed file: its new chunk gets its sentences, the old version's go
    texts = {d.page_content for d in children_of(index).where('parent_id != ""')}
    assert "He never left Lunmar." in texts and "She studied glass chemistry at Velmora." not in texts


@pytest.mark.parametrize(
    "deny",
    [
        'not (chunk_id == "a")',
        'chunk_id != "a"',
        'not json_contains(headings, "Salaries")',
        'not (pk in ["a"])',
    ],
)
def test_a_deny_filter_on_chunk_fields_holds_for_sentence_search(index: ChunkIndex, deny: str) -> None:
    """Sentence rows carry their chunk's access labels, not its heading or id: a filter that denies
    a chunk by those admitted its sentences, and the search returned the denied chunk (attack round
    3). The parents are read under the same filter."""
    index.add([chunk("a", LONG, headings=["Salaries"]), chunk("b", OTHER, headings=["Mills"])])
    build_sentences(index)
    [allowed] = search_parents(
        index, ["She studied glass chemistry at Velmora."], k=2, mode="dense", expr=None
    )
    assert "a" in [str(d.id) for d, _ in allowed]  # without the filter the chunk is found
    [hits] = search_parents(index, ["She studied glass chemistry at Velmora."], k=2, mode="dense", expr=deny)
    assert "a" not in [str(d.id) for d, _ in hits] and [str(d.id) for d, _ in hits] == ["b"]
