"""A question about the person a role leads to ("the founder of X") is answered from what is said
about that person, or not at all (issue 51 item 5: "Brandt" or the institute's own city for "In
which town was the founder ... born?").

The passages are ingested chunks as the store holds them: the file's name as the title, the
document's headings leading the text. A chunk holding the person's birthplace answers; without it
the reader says ``no_evidence`` instead of a surname (a person for a town), a date, a section's
heading, or a city the founder's passage never names.
"""

from __future__ import annotations

from langchain_core.documents import Document

from rag_graphs.text.reader import read

QUESTION = "In which town was the founder of the Orlin Museum born?"


def chunk(name: str, text: str) -> Document:
    """A chunk of file ``name`` as ingest stores it: the file's name as its title."""
    return Document(page_content=text, metadata={"title": name}, id=f"{name}:{text[:60]}")


MUSEUM = chunk(
    "orlin_museum",
    "The Orlin Museum\nThe Orlin Museum is a private museum of maritime painting. It was founded "
    "in 1962 by the painter Mara Quell, who led it until her death in 2001.",
)
LOCATION = chunk(
    "orlin_museum",
    "The Orlin Museum\nLocation\nThe museum stands on the quay of Feldport, a harbour city far "
    "from its founder's birthplace.",
)
INTRO = chunk(
    "mara_quell",
    "Mara Quell\nMara Quell (1930-2001) was a painter known for her storms at sea.",
)
CAREER = chunk(
    "mara_quell",
    "Mara Quell\nCareer\nAfter twenty years of teaching, Quell founded a museum of maritime "
    "painting and directed it for four decades.",
)
EARLY = chunk(
    "mara_quell",
    "Mara Quell\nEarly life\nQuell was born in Tessin, where her mother kept a ferry. She left "
    "Tessin at sixteen to study painting.",
)
TOWN = chunk(
    "tessin",
    "Tessin\nTessin is a small fishing town on the coast of the province of Varra. About 3,000 "
    "people live there.",
)
OTHER = chunk(
    "ravel_trust",
    "The Ravel Trust\nThe Ravel Trust funds coastal studies. It was founded in 1990 by Jonas "
    "Ravel, who was born in Amberly and later taught in Feldport.",
)


def test_the_persons_birthplace_chunk_answers_in_any_order():
    for documents in (
        [MUSEUM, EARLY, LOCATION, INTRO],
        [LOCATION, INTRO, CAREER, MUSEUM, EARLY],
        [EARLY, OTHER, MUSEUM, CAREER],
        [TOWN, EARLY, MUSEUM, INTRO],  # the town's own passage first: its province is no answer
        [OTHER, MUSEUM, EARLY],  # another founder's birthplace first
    ):
        reading = read(QUESTION, documents)
        assert reading.answer == "Tessin", (documents, reading)
        assert "born in Tessin" in reading.quote


def test_without_it_the_reader_abstains_instead_of_a_surname_a_date_or_another_city():
    for documents in (
        [MUSEUM, LOCATION, CAREER, INTRO],
        [LOCATION, MUSEUM, CAREER],
        [CAREER, MUSEUM, INTRO, OTHER],
        [MUSEUM, INTRO, LOCATION, OTHER],
    ):
        reading = read(QUESTION, documents)
        assert reading.no_evidence, (reading.answer, reading.reason)
        assert reading.answer == ""


def test_the_role_person_is_still_the_answer_when_the_question_asks_for_a_person():
    reading = read("Who was the founder of the Orlin Museum?", [LOCATION, MUSEUM, INTRO])
    assert reading.answer == "Mara Quell"


def test_a_date_is_never_a_place():
    dates = chunk("tide_log", "Tide Log\nHistory\nThe log was kept from 1850 to 1900 by two keepers.")
    assert read("In which town was the tide log kept?", [dates]).no_evidence


def test_a_sections_heading_is_never_an_answer():
    heading = chunk("mara_quell", "Mara Quell\nCareer\nQuell taught for twenty years.")
    reading = read("Where did Mara Quell teach?", [heading])
    assert reading.answer != "Career"


def test_a_passage_that_speaks_of_the_founder_without_naming_them_is_no_answer_about_them():
    """CRAG's knowledge strips keep the museum's "founder's birthplace" sentence and may drop the
    one naming the founder: the city of that sentence is not where the founder was born."""
    strip = chunk("orlin_museum", "The Orlin Museum The Orlin Museum is a museum of maritime painting.")
    for documents in ([strip, LOCATION, CAREER], [LOCATION, strip]):
        reading = read(QUESTION, documents)
        assert reading.no_evidence, (reading.answer, reading.reason)
    named = chunk("orlin_museum", "The Orlin Museum The museum was begun by Mara Quell in 1962.")
    reading = read(QUESTION, [named, LOCATION, EARLY])  # someone named: the rule does not fire
    assert reading.answer == "Tessin", reading.reason


def test_a_clause_past_the_founder_is_not_answered_about_the_founder():
    """ "The capital of the province *where* the founder was born": the answer is the table's row
    reached through the founder's town, in no sentence about the founder."""
    town = chunk("tessin", "Tessin\nTessin is a small fishing town in the province of Varra.")
    table = chunk(
        "provinces",
        "provinces\n| Province | Capital |\n|----------|---------|\n| Varra | Lunmark |\n| Oster | Pell |",
    )
    question = "What is the capital of the province where the founder of the Orlin Museum was born?"
    reading = read(question, [MUSEUM, EARLY, town, table])
    assert reading.answer == "Lunmark", reading.reason
