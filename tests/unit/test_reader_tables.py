"""The extractive reader reads table rows (ingest writes every table as a Markdown chunk): each
row is a sentence, each cell a candidate labelled by its column, and the row the answer comes
from is the one the question or another passage leads to, not the table's first.

Real spaCy parses the prose; the table is scripted Markdown as ingest writes it
(``ingestion/convert/chunking.py``: the file's name on the first line, then the table).
"""

from __future__ import annotations

from langchain_core.documents import Document

from rag_graphs.text.answer_types import answer_type, column_label
from rag_graphs.text.candidates import tables
from rag_graphs.text.reader import parsed_documents, read
from rag_graphs.text.reader_features import candidate_features

REGIONS_TABLE = (
    "| Region  | Capital   | Population |\n"
    "|---------|-----------|------------|\n"
    "| Norvale | Eskbury   | 410000     |\n"
    "| Tarsh   | Holmfirth | 220000     |\n"
    "| Quillon | Wendmoor  | 975000     |"
)


def chunk(title: str, text: str, kind: str = "text") -> Document:
    """A chunk as ingest stores it: the file's name on the first line."""
    return Document(page_content=f"{title}\n{text}", metadata={"title": title, "kind": kind}, id=title)


REGIONS = chunk("regions", REGIONS_TABLE, kind="table")
QUIST = chunk(
    "mara_quist", "Mara Quist is a painter. Quist was born in Pell Harbour and moved away at twenty."
)


def village(region: str) -> Document:
    return chunk("pell_harbour", f"Pell Harbour is a fishing village on the coast of the region of {region}.")


def test_a_row_the_question_names_answers_from_the_asked_column():
    for region, capital in (("Quillon", "Wendmoor"), ("Norvale", "Eskbury"), ("Tarsh", "Holmfirth")):
        reading = read(f"What is the capital of {region}?", [REGIONS])
        assert reading.answer == capital, reading.reason
        row = reading.chain[-1].sentence
        assert row.startswith(f"| {region}") and row in REGIONS.page_content  # the row, verbatim


def test_the_row_another_passage_leads_to_wins_not_the_first_row():
    """Four hops as the demo has them, on other names: the person's passage names her village,
    the village's passage its region, the table the region's capital. Moving the village to
    another region moves the answer: the row is chosen by the chain, not by its place."""
    question = "What is the capital of the region where Mara Quist was born?"
    for region, capital in (("Tarsh", "Holmfirth"), ("Quillon", "Wendmoor")):
        documents = [QUIST, village(region), REGIONS]
        reading = read(question, documents)
        assert reading.answer == capital, reading.reason
        assert [e.doc_index for e in reading.chain] == [1, 2]  # the village's sentence, then the row
        assert region in reading.chain[0].sentence and capital in reading.chain[1].sentence
        for evidence in reading.chain:
            assert evidence.sentence in documents[evidence.doc_index].page_content


def test_cells_are_candidates_labelled_by_their_column_and_headers_are_not():
    question = "What is the capital of the region where Mara Quist was born?"
    offered = {
        c.text: c.label
        for c in candidate_features(question, answer_type(question), parsed_documents([REGIONS]), {})
    }
    assert offered["Eskbury"] == "GPE" and offered["Wendmoor"] == "GPE"  # the Capital column
    assert "975000" not in offered  # a number is no capital (a place)
    counted = "How many people live in the region where Mara Quist was born?"
    numbers = {
        c.text: c.label
        for c in candidate_features(counted, answer_type(counted), parsed_documents([REGIONS]), {})
    }
    assert numbers["975000"] == "CARDINAL"
    assert "Capital" not in offered and "Population" not in offered
    assert column_label("Year founded") == "DATE" and column_label("Director") == "PERSON"
    assert column_label("Coastline") == ""


def test_a_number_is_read_from_the_row_the_question_names():
    reading = read("How many people live in Tarsh?", [REGIONS])
    assert reading.answer == "220000", reading.reason


def test_prose_around_a_table_stays_sentences_and_a_lone_bar_line_is_no_table():
    text = f"Regions of the north.\n{REGIONS_TABLE}\nFigures from the 2020 census."
    assert len(tables(text)) == 1
    (passage,) = parsed_documents([chunk("regions", text)])
    rows = [s for s in passage.sentences if s.header]
    assert [s.text.split("|")[1].strip() for s in rows] == ["Norvale", "Tarsh", "Quillon"]
    assert rows[0].header == ("Region", "Capital", "Population")
    prose = [s.text for s in passage.sentences if not s.header]
    assert prose == ["Regions of the north.", "Figures from the 2020 census."]
    assert tables("| a pipe at the start of a line, no rule under it |\nand prose") == []
