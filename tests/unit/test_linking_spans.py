"""Mentions that are the question's own words are not linked (``linking.mention_span``): spaCy's
DATE "what year" matched no key and linked noise by meaning; trailing function words are cut."""

from __future__ import annotations

import pytest

from rag_graphs.entity_graph import linking
from rag_graphs.entity_graph.linking import link_question, mention_span
from tests.graph_seams import use_extractor
from tests.unit.test_graph import PASSAGES, chunk, ingest


@pytest.mark.parametrize(
    ("mention", "span"),
    [
        ("what year", ""),
        ("What year", ""),
        ("which century", ""),
        ("how many years", ""),
        ("Who Framed Roger Rabbit", "Who Framed Roger Rabbit"),  # a title: capitalised words follow
        ("How I Met Your Mother", "How I Met Your Mother"),
        ("What's Eating Gilbert Grape", "What's Eating Gilbert Grape"),
        ("October 1995 to", "October 1995"),
        ("the Dundee Canal or", "the Dundee Canal"),
        ("the UCLA School of Theater,", "the UCLA School of Theater"),
        ("the year", "the year"),
        ("of the", ""),
        ("", ""),
    ],
)
def test_mention_span(mention, span):
    assert mention_span(mention) == span


def test_a_question_word_span_is_not_searched_by_meaning(index, monkeypatch):
    ingest(index, [chunk(c) for c in PASSAGES])
    use_extractor(monkeypatch, lambda texts: [["What year", "Korvik to"] for _ in texts])
    searched: list[int] = []
    real = linking.nearest_entities

    def spy(index, vectors, limits, threshold, names=None, rows=None):  # type: ignore[no-untyped-def]
        searched.append(len(vectors))
        return real(index, vectors, limits, threshold, names, rows)

    monkeypatch.setattr(linking, "nearest_entities", spy)
    linked = link_question(index, "What year was Korvik to be founded?", threshold=0.75, limit=5)
    assert linked.mentions == ["Korvik"] and "korvik" in linked.seeds
    assert searched == [0]  # no mention left unmatched: nothing searched by meaning
