"""What two named items share (``rag_graphs.text.shared``), read through the reader.

Real spaCy parses the scripted passages (no embedder). Each question names two items whose
passages both say the answer; the span reader alone answers most of them with a span of one
passage (a nationality for a sport, nothing for a profession), which is why the rule exists.
"""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from rag_graphs.text.answer_types import answer_type
from rag_graphs.text.comparisons import named_items
from rag_graphs.text.reader import parsed_documents, read
from rag_graphs.text.shared import asks_shared, description_items


def doc(title: str, text: str) -> Document:
    """A passage as the store holds it: the title on the first line."""
    return Document(page_content=f"{title}\n{text}", metadata={"title": title})


ORLA = doc(
    "Orla Vance", "Orla Vance (born 4 March 1981) is a Danish professional badminton player and coach."
)
PIET = doc("Piet Marlow", "Piet Marlow (born 9 June 1979) is a retired Belgian badminton player.")
HESKE = doc(
    "Anton Heske",
    "Anton Heske (born May 2, 1950) is an American film director, screenwriter, actor, and producer.",
)
ROLAND = doc(
    "Mara Roland",
    "Mara Roland (born 1964) is an American film director, screenwriter, producer and musician.",
)
SILT = doc("Silt Harbour", "Silt Harbour is a 2004 British documentary film written and directed by Jon Ree.")
EMBERS = doc("The Grey Embers", "The Grey Embers is a 2011 Kenyan nature documentary film by Ada Okoro.")


@pytest.mark.parametrize(
    ("question", "documents", "answer"),
    [
        ("What sport is played by both Orla Vance and Piet Marlow?", [ORLA, PIET], "badminton"),
        ("What profession do Anton Heske and Mara Roland have in common?", [HESKE, ROLAND], "director"),
        ("Both Silt Harbour and The Grey Embers are what type of films?", [SILT, EMBERS], "documentary film"),
        ("What kind of film are Silt Harbour and The Grey Embers?", [EMBERS, SILT], "documentary film"),
        ("Anton Heske and Mara Roland are both this nationality?", [HESKE, ROLAND], "American"),
    ],
)
def test_what_two_named_items_share_is_read_from_both_their_passages(question, documents, answer):
    """The sport is the word before "player" both leads end on, not the nationality the span reader
    takes; a profession is the head noun of the first description both leads list; a type is the
    whole run both end on; a nationality the NORP both say. The evidence is one sentence of each."""
    reading = read(question, documents)
    assert reading.answer == answer, reading.reason
    assert not reading.no_evidence
    assert {e.doc_index for e in reading.chain} == {0, 1}
    for evidence in reading.chain:
        assert evidence.sentence in documents[evidence.doc_index].page_content


def test_a_profession_one_lead_lists_is_found_as_a_verb_in_the_other_passage():
    """One item is a film, the other a person: only the person's lead lists professions, and the
    film's passage says one of them as a verb ("directed by")."""
    film = doc(
        "Night Canal",
        "Night Canal is a 1988 Indian Tamil film, directed by Vera Sand and produced by Lio Dune.",
    )
    person = doc("Vera Sand", "Vera Sand is an Indian film playback singer, director, writer and producer.")
    reading = read("What type of profession do Night Canal and Vera Sand have in common?", [film, person])
    assert reading.answer == "director", reading.reason


def test_a_person_both_passages_name_is_the_one_the_question_words_stand_beside():
    """Both musicals name their composer and their lyricist; "wrote lyrics" stands beside the
    lyricist ("lyricist Tom Baker"), so the lyricist is the answer, not the composer both also name."""
    show = doc(
        "Garden of Glass",
        "Garden of Glass is a rock musical by composer Ned Fisher and lyricist Tom Baker, staged in 1982.",
    )
    song = doc(
        "Be My Lantern",
        'Be My Lantern is a song written by lyricist Tom Baker and composer Ned Fisher for "Lantern".',
    )
    reading = read('Who wrote lyrics for both "Garden of Glass" and the song "Be My Lantern"?', [show, song])
    assert reading.answer == "Tom Baker", reading.reason


def test_without_a_shared_description_the_span_reader_answers():
    """Two leads with nothing in common give no shared answer: the question goes to the span reader
    (its reason names a span, not both items' leads)."""
    lake = doc("Lake Orm", "Lake Orm is a freshwater lake in Norway.")
    reading = read("What kind of places are Lake Orm and Anton Heske?", [lake, HESKE])
    assert "both items" not in reading.reason


def test_a_title_inside_a_longer_named_title_is_not_an_item():
    """ "Holland (surname)" is named inside "André Holland": the items are André Holland and Velvet Road."""
    question = "What country of origin does André Holland and Velvet Road have in common?"
    passages = parsed_documents(
        [
            doc("André Holland", "André Holland (born 1979) is an American actor."),
            doc("Holland (surname)", "Holland is a surname of Dutch origin."),
            doc("Velvet Road (film)", "Velvet Road is a 2013 American sports film."),
        ],
        question,
    )
    assert named_items(question, passages) == [0, 2]


def test_which_questions_ask_what_two_items_share():
    assert asks_shared(
        "What sport is played by both A and B?", answer_type("What sport is played by both A and B?")
    )
    kind = "What kind of film are Silt Harbour and The Grey Embers?"
    assert asks_shared(kind, answer_type(kind))
    for question in (
        "Who directed Silt Harbour?",
        "What kind of film is Silt Harbour?",
        "Are Silt Harbour and The Grey Embers both documentaries?",
        "Which county shares a border with the county where Silt Harbour was filmed?",
    ):
        assert not asks_shared(question, answer_type(question)), question


def test_a_lead_lists_what_its_subject_is():
    assert description_items(
        "Anton Heske (born 1950) is an American film director, screenwriter, and producer."
    ) == [
        ["film", "director"],
        ["screenwriter"],
        ["producer"],
    ]
    assert description_items("Piet Marlow is a retired Belgian badminton player.") == [
        ["badminton", "player"]
    ]
    assert description_items("Lake Orm lies in Norway.") == []


def test_an_ingested_chunks_heading_lines_are_passed_over_for_its_lead():
    """An ingested file's chunk opens with its heading lines, one a line: the lead is the first
    sentence of prose after them."""
    orla = Document(
        page_content="Orla Vance\nLife\nCareer\nOrla Vance is a Danish professional badminton player.",
        metadata={"title": "orla_vance"},
    )
    reading = read("What sport is played by both Orla Vance and Piet Marlow?", [orla, PIET])
    assert reading.answer == "badminton", reading.reason
