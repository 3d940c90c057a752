"""Answer spans as answers give them (issue 51, HotpotQA bridge answers): the reader's span is the
gold answer's boundaries, not spaCy's, and a question's type rules keep spans of the wrong kind out.

``shaped`` and ``answer_spans`` are checked on scripted sentences with hand-made spans (no model);
the rest reads scripted passages with the real spaCy pipeline the reader loads, as
``test_reader.py`` does, and no embedder.
"""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from rag_graphs.text.answer_types import answer_type
from rag_graphs.text.candidates import Span
from rag_graphs.text.reader import parsed_documents, read
from rag_graphs.text.reader_features import candidate_features
from rag_graphs.text.spans import DESCRIPTION, answer_spans, description_spans, shaped


def doc(title: str, text: str) -> Document:
    """A passage as the store holds it: the title on the first line."""
    return Document(page_content=f"{title}\n{text}", metadata={"title": title})


def span_of(sentence: str, text: str, label: str) -> Span:
    start = sentence.index(text)
    return Span(text, label, start, start + len(text), 0, 1)


def offered(question: str, documents: list[Document]) -> list[tuple[str, str]]:
    """(text, label) of every candidate the reader scores for ``question``."""
    found = candidate_features(question, answer_type(question), parsed_documents(documents), {})
    return [(c.text, c.label) for c in found]


@pytest.mark.parametrize(
    ("sentence", "span", "label", "expected"),
    [
        # spaCy starts a name inside its quoted nickname: the first name belongs to it
        ('He is Souleymane "Sol" Bamba, a footballer.', 'Sol" Bamba', "PERSON", 'Souleymane "Sol" Bamba'),
        ('She is Deborah "Deb" Lacusta (born 1958).', 'Deb" Lacusta (', "PERSON", 'Deborah "Deb" Lacusta'),
        ('He is Henry Albert "Hank" Azaria.', '"Hank" Azaria', "PERSON", 'Henry Albert "Hank" Azaria'),
        # a biography's first sentence whose first name spaCy left out
        ("Dirk Werner Nowitzki is a German player.", "Werner Nowitzki", "PERSON", "Dirk Werner Nowitzki"),
        # a bracket the span opens and never closes is cut, with what spaCy left after the name
        ('"I Am Furious (Yellow)" is an episode.', "I Am Furious (Yellow", "WORK_OF_ART", "I Am Furious"),
        (
            "an agent of the Federal Bureau of Investigation (FBI office",
            "Federal Bureau of Investigation (FBI",
            "ORG",
            "Federal Bureau of Investigation",
        ),
        # a number's hedge is no part of the number
        ("The books sold over 100 million copies.", "over 100 million", "CARDINAL", "100 million"),
        ("It has approximately 4,000 members.", "approximately 4,000", "CARDINAL", "4,000"),
    ],
)
def test_shaped_gives_the_answer_boundaries(sentence: str, span: str, label: str, expected: str) -> None:
    got = shaped(span_of(sentence, span, label), sentence)
    assert got.text == expected
    assert sentence[got.start : got.end] == got.text  # still a verbatim slice of its sentence


@pytest.mark.parametrize(
    ("sentence", "span", "label"),
    [
        ("The Werner Nowitzki award is given yearly.", "Werner Nowitzki", "PERSON"),  # "The" is no first name
        ("In Berlin Werner Nowitzki met her.", "Werner Nowitzki", "PERSON"),
        ('He met Henry "Hank" Azaria there.', 'Henry "Hank" Azaria', "PERSON"),  # whole already
        ("It was over by 12 May 1990.", "12 May 1990", "DATE"),  # dates are date_parts' job
        ("Over the years Velmar grew.", "Velmar", "ORG"),  # a hedge only before a number
    ],
)
def test_shaped_leaves_a_whole_span_alone(sentence: str, span: str, label: str) -> None:
    before = span_of(sentence, span, label)
    assert shaped(before, sentence) == before


def test_a_row_of_places_offers_its_shorter_rows_from_the_first() -> None:
    sentence = "It was formed in Battle Creek, Michigan, United States, in 1987."
    row = "Battle Creek, Michigan, United States"
    start = sentence.index(row)
    texts = [s.text for s in answer_spans(Span(row, "GPE", start, start + len(row), 4, 9), sentence)]
    assert texts == [row, "Battle Creek, Michigan"]
    pair = "Boston, Massachusetts"
    assert [s.text for s in answer_spans(Span(pair, "GPE", 0, len(pair), 0, 2), pair)] == [pair]


def test_the_reader_offers_the_shaped_spans() -> None:
    passages = [
        doc(
            "Nowitzki",
            "Dirk Werner Nowitzki is a German professional basketball player for the Dallas Mavericks.",
        ),
        doc("Narnia", "The Chronicles of Narnia have sold over 100 million copies in 47 languages."),
        doc(
            "Biohazard",
            "Biohazard is a heavy metal band formed in Battle Creek, Michigan, United States, in 1987.",
        ),
    ]
    texts = {text for text, _ in offered("Which player took part in the Hoop Summit?", passages)}
    assert "Dirk Werner Nowitzki" in texts and "Werner Nowitzki" not in texts
    assert "Battle Creek, Michigan" in texts
    numbers = {text for text, _ in offered("How many copies have the novels sold?", passages)}
    assert "100 million" in numbers and "over 100 million" not in numbers


def test_a_year_question_is_answered_by_a_span_holding_a_year() -> None:
    passage = doc(
        "Tara Lipinski",
        "Tara Lipinski, coached by Richard Callaghan, became world champion at the age of 14 years. "
        "She won the national title in 1997.",
    )
    question = "In which year did the skater coached by Richard Callaghan become world champion?"
    dates = {text for text, _ in offered(question, [passage])}
    assert dates == {"1997"}  # "the age of 14 years" is a DATE to spaCy, not a year
    assert read(question, [passage]).answer == "1997"


def test_a_nationality_is_no_answer_to_a_which_thing_question() -> None:
    passage = doc("Velmar X2", "The Velmar X2 is a German sports car made by Orlan Motors since 2004.")
    question = "Which company makes the Velmar X2?"
    labels = {label for _, label in offered(question, [passage])}
    assert "NORP" not in labels
    assert read(question, [passage]).answer == "Orlan Motors"
    # a kind question still gets it
    assert read("What nationality is the Velmar X2?", [passage]).answer == "German"


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("What party was the man who largely repealed the Black Act a member of?", "other"),
        ("Which team did the player who won the 1990 title join?", "other"),
        ("Who directed the film which won the award?", "person"),
        ("What was the nickname of the player who retired in 2016?", "person"),
        ("Which actor who starred in Blue Harbour was born in Dover?", "person"),
        ("What character in Blue Harbour was played by the actor who starred in Korvik Falls?", "person"),
        ("The company which owns the monorail was assisted in financing by whom?", "person"),
        # a role named after a name or number that modifies it
        ('What MLB pitcher nicknamed "Gander" was written about in a film?', "person"),
        ("What 1958 born American television writer contributed to the album?", "person"),
        ("What American former competitive swimmer was her team mate?", "person"),
        # the wh-phrase's own noun comes first
        ("Alex Haley wrote what novel about a man that was born in 1750?", "other"),
        ("Which university educated the scientist who explained the photoelectric effect?", "other"),
        ("What film did the actor who starred in Blue Harbour direct?", "other"),
    ],
)
def test_a_relative_who_does_not_make_a_person_question(question: str, kind: str) -> None:
    assert answer_type(question).kind == kind


def test_the_party_not_the_man() -> None:
    passage = doc(
        "Robert Peel",
        "Sir Robert Peel, who largely repealed the Black Act, was a member of the Conservative Party.",
    )
    got = read("What party was the man who largely repealed the Black Act a member of?", [passage])
    assert got.answer == "the Conservative Party"


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        (
            "Aspidistra is a genus of flowering plants in the family Asparagaceae.",
            {"genus", "genus of flowering plants", "flowering plants", "plants"},
        ),
        (
            "Sicko is a 2007 American documentary film made by Michael Moore.",
            {"documentary", "documentary film"},
        ),
        (
            "Daniel Lee (born 1951) was an American stage/film director and producer.",
            {"director and producer"},
        ),
        ("Justin Gimelstob is a retired American tennis player.", {"tennis", "tennis player", "player"}),
    ],
)
def test_a_lead_sentence_offers_what_its_subject_is(sentence: str, expected: set[str]) -> None:
    """The noun phrase after "is a", without its year, nationality or "retired": a "what kind"
    answer is a common noun no entity span holds."""
    found = description_spans(sentence)
    assert expected <= {s.text for s in found}
    assert all(s.label == DESCRIPTION and sentence[s.start : s.end] == s.text for s in found)
    assert not {s.text for s in found} & {"American", "2007", "retired", "Asparagaceae", "of"}


def test_no_copula_no_description() -> None:
    assert description_spans("Born in Aarhus, she studied film in Copenhagen.") == []


def test_a_what_kind_question_is_answered_by_a_lead_sentences_common_noun() -> None:
    passages = [
        doc("Aspidistra", "Aspidistra is a genus of flowering plants in the family Asparagaceae."),
        doc(
            "Arbutus",
            "Arbutus is a genus of 11 accepted species of flowering plants in the family Ericaceae.",
        ),
    ]
    question = "Arbutus and Aspidistra are what types of plants?"
    assert ("flowering plants", DESCRIPTION) in offered(question, passages)
    # a person's question gets no description: "director" is no one's name
    person = [doc("Ilsa Brandt", "Ilsa Brandt is a Danish film director.")]
    assert DESCRIPTION not in {label for _, label in offered("Who directed Korvik Falls?", person)}


@pytest.mark.parametrize(
    ("sentence", "span", "label", "expected"),
    [
        # a name inside a longer one: a quoted title before more words, a club without "F.C."
        (
            'He ran the "Boston Herald" Rumor Clinic.',
            'the "Boston Herald" Rumor Clinic',
            "ORG",
            "Boston Herald",
        ),
        ("He joined Manchester United F.C. in 2001.", "Manchester United F.C.", "ORG", "Manchester United"),
    ],
)
def test_a_name_inside_a_longer_name_is_offered_too(sentence: str, span: str, label: str, expected: str):
    found = answer_spans(span_of(sentence, span, label), sentence)
    assert [s.text for s in found] == [span, expected]
    assert all(sentence[s.start : s.end] == s.text for s in found)


@pytest.mark.parametrize(
    ("sentence", "span", "expected"),
    [
        ("The firm was founded in Lancaster about 1730.", "about 1730", ["about 1730"]),
        ("Robert Gillow (1704–1772) founded it.", "1704–1772", ["1704", "1772"]),
    ],
)
def test_a_year_spacy_calls_a_number_is_a_date(sentence: str, span: str, expected: list[str]) -> None:
    found = answer_spans(span_of(sentence, span, "CARDINAL"), sentence)
    assert [(s.text, s.label) for s in found] == [(text, "DATE") for text in expected]
    # a count stays a number
    counted = "It has 150 species."
    assert [s.label for s in answer_spans(span_of(counted, "150", "CARDINAL"), counted)] == ["CARDINAL"]


def test_a_founding_year_spacy_calls_a_number_answers_a_year_question() -> None:
    passage = doc(
        "Gillows of Lancaster",
        "Gillows of Lancaster was a furniture firm founded in Lancaster about 1730 by Robert Gillow.",
    )
    reading = read("In which year was the furniture firm Gillows of Lancaster founded?", [passage])
    assert reading.answer == "1730", reading.reason


def test_a_name_spacy_cuts_at_its_quoted_nickname_is_offered_whole() -> None:
    # spaCy reads 'Deborah' as a person and 'Deb" Lacusta (' as a work of art: the whole name is
    # one person candidate, in the pieces' place
    passages = [
        doc("Deb Lacusta", 'Deborah "Deb" Lacusta (born March 15, 1958) is an American television writer.'),
        doc("Kassie DePaiva", 'Katherine Virginia "Kassie" DePaiva (born 1961) is an American actress.'),
    ]
    found = offered("Which American television writer was born in 1958?", passages)
    assert ('Deborah "Deb" Lacusta', "PERSON") in found
    assert ('Katherine Virginia "Kassie" DePaiva', "PERSON") in found
    assert not any(text in ("Deborah", 'Deb" Lacusta', 'Katherine Virginia "') for text, _ in found)


def test_a_quoted_title_between_names_is_no_nickname() -> None:
    # no person among the pieces, or a title of several words: no name is made up
    passages = [doc("Boogie Nights", 'The studio New Line "Boogie Nights" Premiere was held in Los Angeles.')]
    texts = {text for text, label in offered("Where was the premiere held?", passages) if label == "PERSON"}
    assert not any('"' in text for text in texts)


@pytest.mark.parametrize(
    ("sentence", "span", "expected"),
    [
        ("Striker Samuel Eto'o joined the club in 1997.", "Striker Samuel Eto'o", "Samuel Eto'o"),
        (
            "Detective Inspector Humphrey Goodman is played by Kris Marshall.",
            "Humphrey Goodman",
            "Humphrey Goodman",
        ),
        # a title of rank is part of the name
        ("Sir Alex Ferguson managed the club.", "Sir Alex Ferguson", "Sir Alex Ferguson"),
        # nor is a possessive
        ("Eric Whitacre's Water Night is a choral work.", "Eric Whitacre's", "Eric Whitacre"),
    ],
)
def test_a_role_or_possessive_spacy_reads_into_a_name_is_no_part_of_it(
    sentence: str, span: str, expected: str
) -> None:
    assert shaped(span_of(sentence, span, "PERSON"), sentence).text == expected
