"""The extractive reader (``rag_graphs.text.reader``): the right span wins per question type,
a restatement of the question never does, no candidate means ``no_evidence``, a bridge
question's chain runs bridge sentence first, and quotes are verbatim.

Real spaCy (the small English pipeline the entity graph already loads) parses the scripted
passages; embeddings are the deterministic fake (no meaning), so the lexical and structural
features carry these answers, as they must when no embedder is passed.
"""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from rag_graphs.text.answer_types import answer_type
from rag_graphs.text.reader import parsed_documents, read
from rag_graphs.text.reader_features import candidate_features


def doc(title: str, text: str) -> Document:
    """A passage as the store holds it: the title on the first line."""
    return Document(page_content=f"{title}\n{text}", metadata={"title": title})


KORVIK = doc(
    "Korvik Falls",
    "Korvik Falls is a 1999 Norwegian drama film directed by Ilsa Brandt. "
    "The film was shot in Bergen over the winter of 1998.",
)
BRANDT = doc(
    "Ilsa Brandt",
    "Ilsa Brandt (born 3 May 1950) is a Danish film director. She was born in Aarhus and "
    "studied in Copenhagen. Brandt has directed twelve feature films.",
)
HARBOUR = doc(
    "Blue Harbour",
    "Blue Harbour is a 1987 British comedy film directed by Tomas Lind. It was shot in Dover.",
)


@pytest.mark.parametrize(
    ("question", "documents", "kind", "answer"),
    [
        ("Who directed the film Korvik Falls?", [KORVIK, HARBOUR], "person", "Ilsa Brandt"),
        ("In which city was Ilsa Brandt born?", [BRANDT, HARBOUR], "place", "Aarhus"),
        ("When was Ilsa Brandt born?", [BRANDT, KORVIK], "date", "3 May 1950"),
        ("How many feature films has Ilsa Brandt directed?", [BRANDT, KORVIK], "number", "twelve"),
        (
            "Which film came out first, Korvik Falls or Blue Harbour?",
            [KORVIK, HARBOUR],
            "which_of_two",
            "Blue Harbour",
        ),
        (
            "Which film came out later, Korvik Falls or Blue Harbour?",
            [KORVIK, HARBOUR],
            "which_of_two",
            "Korvik Falls",
        ),
        ("What nationality is the director Ilsa Brandt?", [BRANDT, KORVIK], "kind", "Danish"),
    ],
)
def test_the_right_candidate_wins_for_each_question_type(question, documents, kind, answer):
    reading = read(question, documents)
    assert reading.answer_type == kind
    assert not reading.no_evidence, reading.reason
    assert reading.answer == answer, reading.reason
    assert 0.0 < reading.confidence <= 1.0


@pytest.mark.parametrize(
    ("question", "options"),
    [
        ("Which movie came out first Korvik Falls or Blue Harbour ?", ("Korvik Falls", "Blue Harbour")),
        ("Who was born first out of Nick Grinde and Karel Reisz?", ("Nick Grinde", "Karel Reisz")),
        ("Who was born first of Leslie S. Hiscott and James Rolfe", ("Leslie S. Hiscott", "James Rolfe")),
        (
            "Which airport served more people in 2015 Asheville Regional Airport or Orlando Airport ?",
            ("Asheville Regional Airport", "Orlando Airport"),
        ),
        (
            "Which was secretary to President Richard Nixon: Rose Mary Woods or H. R. Haldeman?",
            ("Rose Mary Woods", "H. R. Haldeman"),
        ),
        ("Who was born more recent.y,Gunnar Nelson or Florence Welch?", ("Gunnar Nelson", "Florence Welch")),
        ("Which body of water is longer the Dundee Canal or Lake Worth?", ("Dundee Canal", "Lake Worth")),
    ],
)
def test_two_names_compared_without_a_comma_are_the_options(question, options):
    """HotpotQA asks 2-3% of its comparisons without the comma before "A or B" (or as "of A and
    B"): they were read as span questions, whose candidates never include both names."""
    typed = answer_type(question)
    assert (typed.kind, typed.options) == ("which_of_two", options)


@pytest.mark.parametrize(
    "question",
    [
        "Who wrote Tom or Jerry?",  # one title, nothing compared
        "What US city between New York and Quebec Canada was the most affected by the storm?",
        "Which club plays for Borussia Dortmund and the Belgium national team more often?",
    ],
)
def test_an_or_that_compares_nothing_is_not_two_options(question):
    assert answer_type(question).kind != "which_of_two"


def test_a_comparison_without_a_comma_is_answered_with_one_of_its_names():
    reading = read("Which film came out first Korvik Falls or Blue Harbour?", [KORVIK, HARBOUR])
    assert (reading.answer_type, reading.answer) == ("which_of_two", "Blue Harbour"), reading.reason


def test_an_item_is_found_under_a_title_that_says_which_one_it_is():
    """Encyclopedia titles carry a qualifier ("The Lady (magazine)", 16% of HotpotQA's titles);
    a question names the item bare. Under the qualifier the item's passage was not found and a
    dated comparison fell back to which passage holds more of the question's words."""
    lady = doc("The Lady (magazine)", "The Lady is a British weekly magazine founded in 1885.")
    day = doc("Woman's Day", "Woman's Day is an American women's magazine. It was first published in 1931.")
    reading = read("Which magazine was published first, Woman's Day or The Lady?", [day, lady])
    assert (reading.answer, reading.reason) == ("The Lady", "compared min: (1931, 0, 0) vs (1885, 0, 0)")
    polar = read("Are The Lady and Woman's Day both magazines?", [day, lady])
    assert polar.answer == "yes", polar.reason
    assert {e.doc_index for e in polar.chain} == {0, 1}


def test_a_title_spelled_as_the_question_spells_it_beats_a_namesake_with_another_qualifier():
    """2Wiki names items with their qualifier ("Proud Flesh (Film)"): two passages whose titles
    differ only there are two items, and the one the question spells is the one it asks about."""
    film = doc("Proud Flesh (Film)", "Proud Flesh is a 1925 American comedy film directed by King Vidor.")
    novel = doc("Proud Flesh (Novel)", "Proud Flesh is a 1924 British novel by Dora Lind.")
    valpre = doc("The Rocks Of Valpre (1935 Film)", "The Rocks of Valpre is a 1935 British drama film.")
    question = "Are the movies The Rocks Of Valpre (1935 Film) and Proud Flesh (Film), from the same country?"
    reading = read(question, [novel, valpre, film])
    assert reading.answer == "no", reading.reason
    assert {e.doc_index for e in reading.chain} == {1, 2}
    first = "Which came out first, Proud Flesh (Film) or The Rocks Of Valpre (1935 Film)?"
    older = read(first, [novel, valpre, film])
    assert older.answer == "Proud Flesh (Film)", older.reason
    assert [e.doc_index for e in older.chain][-1] == 2


def test_with_nothing_to_compare_the_item_whose_passage_holds_the_asked_words_wins():
    """ "Which was secretary to Nixon, A or B?": Haldeman's one sentence says most of the question's
    words ("President Richard Nixon"), Woods' passage says all of them across two sentences. The
    words both passages hold cancel out; the one only Woods' holds ("secretary") decides. The old
    rule (the best sentence's share alone) answered Haldeman."""
    woods = doc(
        "Rose Mary Woods",
        "Rose Mary Woods was an aide to Richard Nixon. She was his secretary, also while he was President.",
    )
    haldeman = doc(
        "H. R. Haldeman",
        "H. R. Haldeman was Chief of Staff to President Richard Nixon.",
    )
    question = "Which was secretary to President Richard Nixon: Rose Mary Woods or H. R. Haldeman?"
    reading = read(question, [haldeman, woods])
    assert reading.answer == "Rose Mary Woods", reading.reason
    assert [e.doc_index for e in reading.chain] == [1]


def test_what_has_been_around_longer_began_first():
    typed = answer_type("which board game has been around longer Obsession or Battle Sheep ?")
    assert (typed.options, typed.direction) == (("Obsession", "Battle Sheep"), "min")


def test_a_death_date_is_the_second_date_of_a_biography_whole():
    """spaCy tags "12 March 1921 – 4 October 1988" as one date or drops the day of the second
    ("October 1988"); the reader splits the range and takes the day back, and a death question
    reached through the film's passage gets the second date, a birth question the first."""
    lind = doc(
        "Tomas Lind",
        "Tomas Lind (12 March 1921 – 4 October 1988) was a Swedish film director and writer.",
    )
    died = read("When did the director of Blue Harbour die?", [HARBOUR, lind])
    assert died.answer == "4 October 1988", died.reason
    assert [e.doc_index for e in died.chain] == [0, 1]
    assert read("When was the director of Blue Harbour born?", [HARBOUR, lind]).answer == "12 March 1921"


def test_polar_questions_answer_yes_or_no():
    reading = read("Are Korvik Falls and Blue Harbour both films?", [KORVIK, HARBOUR])
    assert reading.answer_type == "yes_no"
    assert reading.answer == "yes"
    reading = read("Are Korvik Falls and Blue Harbour both documentaries?", [KORVIK, HARBOUR])
    assert reading.answer == "no"
    lind = doc("Tomas Lind", "Tomas Lind (born 1960) is a Swedish film director.")
    question = "Do both directors of films Korvik Falls and Blue Harbour have the same nationality?"
    reading = read(question, [KORVIK, HARBOUR, BRANDT, lind])
    assert reading.answer == "no", reading.reason
    assert {e.doc_index for e in reading.chain} == {2, 3}  # the directors' passages
    danish = doc("Tomas Lind", "Tomas Lind (born 1960) is a Danish film director.")
    assert read(question, [KORVIK, HARBOUR, BRANDT, danish]).answer == "yes"


def test_a_restatement_of_the_question_never_wins(fake_embeddings):
    """The question's own entity fills the passage (title, subject, repeated), yet the answer is
    another span: a span made only of the question's words is no candidate at all."""
    question = "Who directed the 1999 Norwegian drama film Korvik Falls?"
    reading = read(question, [KORVIK], embeddings=fake_embeddings)
    assert reading.answer == "Ilsa Brandt"
    for q in ("What is Korvik Falls?", "Who is Ilsa Brandt?", "Where is Bergen?"):
        reading = read(q, [KORVIK, BRANDT], embeddings=fake_embeddings)
        assert reading.answer.lower() not in q.lower(), (q, reading.answer)


def test_no_candidate_of_the_asked_type_means_no_evidence():
    reading = read("When was Tomas Lind born?", [doc("Tomas Lind", "Tomas Lind is a Swedish director.")])
    assert reading.no_evidence
    assert reading.answer == "" and reading.doc_index is None
    assert "date" in reading.reason
    empty = read("Who directed Blue Harbour?", [])
    assert empty.no_evidence and empty.reason


def test_a_bridge_question_chains_the_bridge_sentence_first():
    """The answer (Aarhus) is in Brandt's passage; the question names only the film, whose
    passage leads to Brandt: that sentence comes first in the chain, the answer's last."""
    reading = read("In which city was the director of Korvik Falls born?", [BRANDT, KORVIK])
    assert reading.answer == "Aarhus"
    assert [e.doc_index for e in reading.chain] == [1, 0]
    assert "directed by Ilsa Brandt" in reading.chain[0].sentence
    assert "Aarhus" in reading.chain[-1].sentence
    assert reading.doc_index == 0


def test_quotes_and_chain_sentences_are_verbatim_from_their_passages():
    documents = [BRANDT, KORVIK, HARBOUR]
    for question in (
        "In which city was the director of Korvik Falls born?",
        "When was Ilsa Brandt born?",
        "Which film came out first, Korvik Falls or Blue Harbour?",
    ):
        reading = read(question, documents)
        assert reading.quote and reading.chain
        for evidence in reading.chain:
            assert evidence.sentence in documents[evidence.doc_index].page_content
            assert evidence.sentence in reading.quote
        if reading.answer_type not in ("which_of_two", "yes_no"):
            assert reading.answer in reading.chain[-1].sentence


def test_answer_types_of_typical_questions():
    assert answer_type("Who was born first, Marino Girolami or Daniel Myrick?").options == (
        "Marino Girolami",
        "Daniel Myrick",
    )
    assert answer_type("Which film has the director born earlier, A or B?").direction == "min"
    assert answer_type("Who lived longer, A or B?").direction == "longer_life"
    assert answer_type("What year did the band form?").kind == "date"
    assert answer_type("Where is the headquarters of Dow?").kind == "place"
    assert answer_type("Do both directors have the same nationality?").kind == "yes_no"


def test_what_is_the_population_or_the_birth_date_asks_for_a_number_or_a_date():
    """The noun after "what was the" types the answer when no wh-noun does: these were "other"
    questions, answered with the subject's name ("Doyle Brunson's" for a birth date)."""
    assert answer_type("What is the population of the birth city of Ada Lind?").kind == "number"
    assert answer_type("What was the estimated population of the town in 2012?").kind == "number"
    assert answer_type("what was the birth date of the poker player that wrote Forty Hands?").kind == "date"
    assert answer_type("What is the name of the band?").kind == "other"
    doyle = doc("Dale Brant", "Dale Brant (born August 10, 1933) is an American poker player.")
    reading = read("What was the birth date of the poker player Dale Brant?", [doyle])
    assert reading.answer == "August 10, 1933", reading.reason


def test_places_in_a_row_are_one_candidate_and_a_year_question_gets_the_year():
    """ "Midland, Michigan" is offered whole (gold answers often name the state too) beside
    "Midland"; the fitted weights choose between them. "What year" answers with the year alone."""
    dow = doc(
        "Dow Chemical Company",
        "The Dow Chemical Company is an American chemical corporation headquartered in Midland, "
        "Michigan. It was founded on May 18, 1897.",
    )
    question = "Where is the Dow Chemical Company headquartered?"
    offered = {
        c.text for c in candidate_features(question, answer_type(question), parsed_documents([dow]), {})
    }
    assert {"Midland, Michigan", "Midland", "Michigan"} <= offered
    assert read(question, [dow]).answer in ("Midland", "Midland, Michigan")
    reading = read("In what year was the Dow Chemical Company founded?", [dow])
    assert reading.answer == "1897"
    assert reading.answer in reading.quote


def test_an_ingested_document_in_several_chunks_is_one_person_for_the_role_hop():
    """Ingested files are titled by their name ("peter_holm") and chunked: the role hop ("the
    founder of X": X's passage names the person) reaches every chunk of the person's file, not
    only the first, and a file's name is never offered as an answer."""
    guild = Document(
        page_content="The Quarry Guild\nThe Quarry Guild is a masons' society. It was founded in 1901 by "
        "the mason Peter Holm, who led it for thirty years.",
        metadata={"title": "quarry_guild"},
    )
    penn_lead = Document(
        page_content="Peter Holm\nPeter Holm (1870–1950) was a mason and sculptor.",
        metadata={"title": "peter_holm"},
    )
    penn_life = Document(
        page_content="Peter Holm\nEarly life\nHolm was born in Hessel, where his uncle cut slate. He left "
        "Hessel at sixteen.",
        metadata={"title": "peter_holm"},
    )
    other = Document(
        page_content="The Slate Fund\nThe Slate Fund was founded by Ivo Marsh, who was born in Tarn.",
        metadata={"title": "slate_fund"},
    )
    question = "In which town was the founder of the Quarry Guild born?"
    reading = read(question, [guild, penn_lead, penn_life, other])
    assert reading.answer == "Hessel", reading.reason
    assert [e.doc_index for e in reading.chain] == [0, 2]  # the guild's sentence, then the birth
    asked = "Who was the founder of the Quarry Guild?"  # a town question offers no person
    offered = {
        c.text
        for c in candidate_features(
            asked, answer_type(asked), parsed_documents([guild, penn_lead, penn_life]), {}
        )
    }
    assert not any("_" in text for text in offered)
    assert "Peter Holm" in offered  # the file's title, as the passage spells it


def test_a_question_whose_words_no_passage_holds_has_no_answer_there():
    """ "What is the purpose of the passage?" over passages that never say "purpose" or
    "passage": any span would be a guess (``eval synth``'s round trip relies on it to drop a
    question about something else)."""
    reading = read("What is the purpose of the passage?", [KORVIK, BRANDT])
    assert reading.no_evidence and reading.answer == ""
    assert "none of the question's words" in reading.reason
    assert not read("What is the purpose of the film Korvik Falls?", [KORVIK, BRANDT]).no_evidence


def test_more_of_a_counted_thing_compares_the_counts_before_that_noun():
    """ "Which genus has more species?": the count before "species", not the first number of a
    sentence ("described in 1853"); "the sole species" counts one."""
    marsilea = doc(
        "Marsilea",
        "Marsilea is a genus described in 1753. It holds approximately 65 species of aquatic ferns.",
    )
    brabejum = doc(
        "Brabejum", "Brabejum is a genus described in 1853 whose sole species is B. stellatifolium."
    )
    reading = read("Which genus has more species, Brabejum or Marsilea?", [brabejum, marsilea])
    assert (reading.answer, reading.reason) == ("Marsilea", "compared more: 1.0 vs 65.0")
    fewer = read("Which genus has fewer species, Marsilea or Brabejum?", [marsilea, brabejum])
    assert (fewer.answer, fewer.reason) == ("Brabejum", "compared less: 65.0 vs 1.0")


def test_one_species_against_a_count_not_given_has_fewer():
    """A genus whose passage gives no count has at least one species: more than "the sole
    species" or "a monotypic genus" of the other."""
    othonna = doc("Othonna", "Othonna is a genus of African plants in the sunflower family.")
    stangeria = doc(
        "Stangeria", "Stangeria eriopus is a cycad. It is the sole species in the genus Stangeria."
    )
    typhonodorum = doc("Typhonodorum", "Typhonodorum is a monotypic genus of flowering plants.")
    for single in (stangeria, typhonodorum):
        name = single.metadata["title"]
        more = read(f"Which genus has more species in it, Othonna or {name}?", [single, othonna])
        assert (more.answer, more.reason) == ("Othonna", "compared more: one against a count not given")
        fewer = read(f"Which genus has fewer species, {name} or Othonna?", [othonna, single])
        assert fewer.answer == name, fewer.reason


def test_a_polar_question_about_a_count_compares_the_counts():
    """ "with three acts?" is "no" when one opera has two; "the same number of acts?" is whether the
    counts agree; a passage without a count leaves the question to the words rule."""
    giovanni = doc("Don Giovanni", "Don Giovanni is an opera in two acts with music by Mozart.")
    cardillac = doc("Cardillac", "Cardillac is an opera in three acts by Paul Hindemith.")
    vanessa = doc("Vanessa", "Vanessa is an American opera in three (originally four) acts by Samuel Barber.")
    three = read("Are both Don Giovanni and Cardillac operas with three acts?", [giovanni, cardillac])
    assert (three.answer, three.reason) == ("no", "compared counts [2.0, 3.0] (asked 3.0)")
    both = read("Are both Vanessa and Cardillac operas with three acts?", [vanessa, cardillac])
    assert both.answer == "yes", both.reason
    same = read("Do the operas Vanessa and Cardillac contain the same number of acts?", [vanessa, cardillac])
    assert (same.answer, same.reason) == ("yes", "compared counts [3.0, 3.0] (asked None)")
    other = read(
        "Do the operas Don Giovanni and Vanessa contain the same number of acts?", [giovanni, vanessa]
    )
    assert other.answer == "no", other.reason
    uncounted = doc("Cardillac", "Cardillac is an opera by Paul Hindemith.")
    assert (
        "counts"
        not in read("Are both Vanessa and Cardillac operas with three acts?", [vanessa, uncounted]).reason
    )


def test_higher_compares_the_largest_height_in_metres_or_feet():
    """A summit's elevation is its passage's largest height; "a 3 km long ridge" is no height,
    and feet are compared as metres."""
    distaghil = doc(
        "Distaghil Sar",
        "Distaghil Sar is the highest mountain in the Hispar Muztagh. The mountain has an about 3 km "
        "long top ridge above 7400m with three summits: west 7885m, central 7760 m.",
    )
    crown = doc(
        "The Crown (mountain)", "The Crown is a mountain in the Karakoram. Its summit is at 26,500 ft."
    )
    reading = read("Which Karakoram mountain is higher: Distaghil Sar or The Crown", [distaghil, crown])
    assert reading.answer == "The Crown", reading.reason  # 26,500 ft is 8077 m, over 7885 m
    lower = doc("The Crown (mountain)", "The Crown is a mountain in the Karakoram. Its summit is at 7295 m.")
    reading = read("Which Karakoram mountain is higher: Distaghil Sar or The Crown", [distaghil, lower])
    assert (reading.answer, reading.reason) == ("Distaghil Sar", "compared more: 7885.0 vs 7295.0")


def test_a_nationality_that_names_the_other_is_the_same_country():
    """ "German" and "East German" name one country for a 1923 film and a 1966 one (2Wiki's
    gold says so); "British" and "American" do not."""
    dollar = doc("The Almighty Dollar (1923 Film)", "The Almighty Dollar is a 1923 German silent drama film.")
    alfons = doc("Alfons Zitterbacke", "Alfons Zitterbacke is a 1966 East German children's film.")
    valpre = doc("The Rocks Of Valpre (1935 Film)", "The Rocks of Valpre is a 1935 British drama film.")
    same = "Are both movies, The Almighty Dollar (1923 Film) and Alfons Zitterbacke, from the same country?"
    assert read(same, [dollar, alfons]).answer == "yes"
    other = "Are both movies, The Rocks Of Valpre (1935 Film) and Alfons Zitterbacke, from the same country?"
    assert read(other, [valpre, alfons]).answer == "no"
