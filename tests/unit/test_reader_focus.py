"""NER only where an answer can be (issue 51, the reader's cost): the reader runs spaCy's NER on
each passage's lead, the sentences naming another passage's title and the few sentences sharing
the most question words (``reader.focus``), not on whole passages. Scripted passages, the real
spaCy pipeline the reader loads, no embedder.
"""

from __future__ import annotations

import numpy as np
from langchain_core.documents import Document

from rag_graphs.text import candidates
from rag_graphs.text.answer_types import answer_type
from rag_graphs.text.reader import FOCUS_SENTENCES, load_weights, parsed_documents, read
from rag_graphs.text.reader_features import candidate_features
from rag_graphs.text.reader_rank import tree_scores

FILLER = [
    "The weather in the valley is mild for most of the year.",
    "Farmers there grow barley, oats and a little rye.",
    "A weekly market is held on the square beside the old mill.",
    "The river floods in spring when the snow melts on the hills.",
    "Tourists come for the walking trails and the quiet inns.",
]


def doc(title: str, text: str) -> Document:
    """A passage as the store holds it: the title on the first line."""
    return Document(page_content=f"{title}\n{text}", metadata={"title": title})


def town() -> Document:
    """A passage whose answer sentence comes after five sentences without a question word."""
    return doc(
        "Harwick",
        "Harwick is a market town in the north of Elvaria. "
        + " ".join(FILLER)
        + " In 1820 the mill was sold to Peter Lamb of Rotterdam."
        + " The Harwick lighthouse was designed by the engineer Tomas Vell in 1871.",
    )


def test_a_question_reads_only_the_sentences_that_can_matter() -> None:
    """The lead, the sentence sharing the question's words, and (to ``FOCUS_SENTENCES``) the
    earliest others; the rest keep their words and offer no span."""
    question = "Who designed the Harwick lighthouse?"
    candidates._CACHE.clear()
    (passage,) = parsed_documents([town()], question)
    texts = [sentence.text for sentence in passage.sentences]
    answer, sold = texts[-1], "In 1820 the mill was sold to Peter Lamb of Rotterdam."
    assert set(candidates._CACHE) == {texts[0], answer, *FILLER[: FOCUS_SENTENCES - 1]}
    spans = {sentence.text: {s.text for s in sentence.spans} for sentence in passage.sentences}
    assert "Tomas Vell" in spans[answer] and "Elvaria" in spans[texts[0]]
    assert not spans[sold] and passage.sentences[-2].tokens  # unread: words, no span
    (whole,) = parsed_documents([town()])  # without a question, every sentence is read
    assert {s.text for s in whole.sentences[-2].spans} >= {"Peter Lamb", "Rotterdam"}


def test_the_right_candidate_still_wins_from_a_late_sentence() -> None:
    got = read("Who designed the Harwick lighthouse?", [town()])
    assert (got.answer, got.no_evidence) == ("Tomas Vell", False)
    assert "designed by the engineer Tomas Vell" in got.quote


def test_a_sentence_naming_another_passage_is_read_as_a_bridge() -> None:
    """The second hop is reached through a sentence naming its passage's title, though that
    sentence shares no word with the question."""
    film = doc(
        "The Salt Road",
        "The Salt Road is a 1958 drama film. " + " ".join(FILLER) + " Its score was written by Anna Weber.",
    )
    composer = doc("Anna Weber", "Anna Weber (1921-1990) was a composer born in Dunmere.")
    first, second = parsed_documents([film, composer], "Where was the composer of The Salt Road born?")
    naming = [s for s in first.sentences if "Anna Weber" in s.text]
    assert naming and {span.text for span in naming[0].spans} >= {"Anna Weber"}
    assert "anna weber" in first.keys  # the bridge to the second passage still holds
    got = read("Where was the composer of The Salt Road born?", [film, composer])
    assert got.answer == "Dunmere"


def test_only_the_best_sentences_by_question_words_are_read() -> None:
    """Past the leads and bridges, at most ``FOCUS_SENTENCES`` sentences are read, those sharing
    the most question words first."""
    lines = [f"The Harwick tower number {n} stands on the hill." for n in range(FOCUS_SENTENCES + 3)]
    passage = doc("Harwick", "Harwick is a town. " + " ".join(lines))
    (parsed,) = parsed_documents([passage], "Which tower stands on the hill of Harwick?")
    read_ones = [s for s in parsed.sentences[1:] if s.spans]
    assert 0 < len(read_ones) <= FOCUS_SENTENCES


def test_a_comparison_reads_every_sentence() -> None:
    """Which-of-two questions compare whatever the items' passages say: nothing is skipped."""
    asked = "Which was built first, the Harwick lighthouse or the Orm bridge?"
    ((compared,), (whole,)) = parsed_documents([town()], asked), parsed_documents([town()])
    assert compared == whole


def test_sentences_are_parsed_once_by_text() -> None:
    """The NER cache is kept by sentence: a sentence read for one question costs a look-up for the
    next, whichever passage holds it."""
    candidates._CACHE.clear()
    parsed_documents([town()], "Who designed the Harwick lighthouse?")
    before = dict(candidates._CACHE)
    assert FILLER[-1] not in before and any("Tomas Vell" in text for text in before)
    parsed_documents([town()])  # everything: only the unread sentences are new
    assert all(candidates._CACHE[text] == found for text, found in before.items())
    assert FILLER[-1] in candidates._CACHE


def test_a_passage_reached_by_a_bridge_is_read_whole() -> None:
    """The second hop's answer need share no word with the question ("died" for "place of
    death"), and the passage may spell its title otherwise ("N. N. Varek" for "N N Varek")."""
    song = doc(
        "Cold Harbour (song)", "Cold Harbour is a song by the folk singer N. N. Varek. It was a hit in 1977."
    )
    singer = doc(
        "N N Varek",
        "N N Varek (1931 - 1983) was a folk singer. "
        + " ".join(FILLER)
        + " Varek died in a fire at the Orlan Airport.",
    )
    question = "Where was the place of death of the performer of song Cold Harbour?"
    _, reached = parsed_documents([song, singer], question)
    assert any(
        span.text == "the Orlan Airport" or "Orlan" in span.text for span in reached.sentences[-1].spans
    )
    assert "Orlan Airport" in read(question, [song, singer], rerank=False).answer
    # the trees choose between the linear model's two best answers, and the airport is one of them
    # (they pick "N N Varek" here, a near tie: 0.72 against 0.67; BENCHMARKS.md issue 51 round 7)
    typed = answer_type(question)
    passages = parsed_documents([song, singer], question)
    found = candidate_features(question, typed, passages, {})
    linear = np.asarray([c.features for c in found]) @ np.asarray(load_weights().weights)
    scores, _ = tree_scores(question, typed.kind, passages, found, linear)
    assert any("Orlan Airport" in c.text for c, s in zip(found, scores, strict=True) if np.isfinite(s))
