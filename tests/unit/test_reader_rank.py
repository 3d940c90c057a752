"""The extract reader's second stage (``rag_graphs.text.reader_rank``): the trees' rows are the
features ``bench/reader_rank.py`` fitted on, ``read`` answers with the candidate the trees score
highest and abstains under their threshold, and a bad ranker file is refused naming it.

Real spaCy parses the scripted passages; no embedder (the similarity feature stays 0).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from langchain_core.documents import Document

from rag_graphs.config.errors import SetupError
from rag_graphs.text import reader_rank
from rag_graphs.text.answer_types import answer_type
from rag_graphs.text.reader import load_weights, parsed_documents, read
from rag_graphs.text.reader_features import FEATURES, answer_key, candidate_features
from rag_graphs.text.reader_rank import RANK_FEATURES, load_reader_ranker, rank_matrix


def doc(title: str, text: str) -> Document:
    return Document(page_content=f"{title}\n{text}", metadata={"title": title})


FILM = doc(
    "Korvik Falls",
    "Korvik Falls is a 1999 Norwegian drama film directed by Ilsa Brandt. The film was shot in Bergen.",
)
PERSON = doc(
    "Ilsa Brandt",
    "Ilsa Brandt is a Danish film director. She was born in Aarhus and studied in Copenhagen.",
)
QUESTION = "Where was the director of Korvik Falls born?"


def tree_file(tmp_path, roots, nodes, threshold=0.0, features=RANK_FEATURES):
    path = tmp_path / "reader_ranker.json"
    path.write_text(
        json.dumps({"features": list(features), "threshold": threshold, "roots": roots, "nodes": nodes})
    )
    return path


def second_place_tree(tmp_path, threshold=0.0):
    """One tree worth 1 for the linear model's runner-up (``linear_rank`` = 1/2), 0 otherwise."""
    at = RANK_FEATURES.index("linear_rank")
    nodes = {  # 0: rank <= 0.75 ? 1 : 4;  1: rank <= 0.4 ? 2 : 3
        "feature": [at, at, -1, -1, -1],
        "threshold": [0.75, 0.4, 0.0, 0.0, 0.0],
        "left": [1, 2, -1, -1, -1],
        "right": [4, 3, -1, -1, -1],
        "value": [0.0, 0.0, 0.0, 1.0, 0.0],
    }
    return tree_file(tmp_path, [0], nodes, threshold)


@pytest.fixture
def shipped(monkeypatch):
    """Point the shipped ranker at a file of the test's own."""

    def use(path):
        monkeypatch.setattr(reader_rank, "RANKER_PATH", path)
        reader_rank.shipped_reader_ranker.cache_clear()

    yield use
    reader_rank.shipped_reader_ranker.cache_clear()


def linear_order(question, docs):
    typed = answer_type(question)
    passages = parsed_documents(docs, question)
    found = candidate_features(question, typed, passages, {})
    scores = np.asarray([c.features for c in found]) @ np.asarray(load_weights().weights)
    return typed, passages, found, scores


def test_rows_hold_every_rank_feature_and_the_first_stage_columns_are_the_features():
    typed, passages, found, scores = linear_order(QUESTION, [FILM, PERSON])
    x = rank_matrix(QUESTION, typed.kind, passages, found, scores)
    assert x.shape == (len(found), len(RANK_FEATURES))
    assert np.array_equal(x[:, : len(FEATURES)], np.asarray([c.features for c in found]))
    column = dict(zip(RANK_FEATURES, x.T, strict=True))
    assert np.array_equal(column["linear"], scores)
    assert column["linear_rank"][int(np.argmax(scores))] == 1.0
    assert (column["kind:place"] == 1.0).all() and (column["wh:where"] == 1.0).all()
    asked = "Where was Ilsa Brandt born?"
    typed, passages, found, scores = linear_order(asked, [FILM, PERSON])
    column = dict(zip(RANK_FEATURES, rank_matrix(asked, typed.kind, passages, found, scores).T, strict=True))
    at = {c.text: i for i, c in enumerate(found)}
    # "born" is the question's one relation word: Aarhus's sentence holds it, Danish's does not;
    # its entity words (Ilsa, Brandt) are in both passages' titles or sentences
    assert column["relation_words"][at["Aarhus"]] == 1.0 and column["relation_words"][at["Danish"]] == 0.0
    assert column["entity_words"][at["Aarhus"]] == 1.0
    # the passage holding most of the question (the person's) is the best one; the film's is not
    assert column["best_passage"][at["Aarhus"]] == 1.0 and column["best_passage"][at["Norwegian"]] == 0.0
    assert column[f"label:{found[at['Aarhus']].label}"][at["Aarhus"]] == 1.0


def test_read_answers_with_the_candidate_the_trees_score_highest(tmp_path, shipped):
    typed, passages, found, scores = linear_order(QUESTION, [FILM, PERSON])
    order = np.argsort(-scores, kind="stable")
    first, second = found[order[0]], found[order[1]]
    assert first.key != second.key  # the passages give two different answers to choose between
    assert read(QUESTION, [FILM, PERSON], rerank=False).answer == first.text
    shipped(second_place_tree(tmp_path))
    reading = read(QUESTION, [FILM, PERSON])
    assert reading.answer == second.text
    assert reading.answer != read(QUESTION, [FILM, PERSON], rerank=False).answer


def test_the_trees_threshold_decides_abstention(tmp_path, shipped):
    shipped(second_place_tree(tmp_path, threshold=0.99))  # one tree worth 1 among many: share < 0.99
    reading = read(QUESTION, [FILM, PERSON])
    assert reading.no_evidence and "under 0.99" in reading.reason
    assert not read(QUESTION, [FILM, PERSON], threshold=0.0).no_evidence  # the caller's threshold wins


def test_the_shipped_file_loads_and_reads_the_features_the_code_computes():
    ranker = load_reader_ranker()
    assert ranker.trees.features == RANK_FEATURES
    assert 0 <= ranker.threshold < 1
    assert len(ranker.trees.roots) >= 100


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"features": ["type"]}, "was written for the features"),
        ({"threshold": 1.5}, "'threshold' must be a number in [0, 1)"),
        ({"threshold": None}, "'threshold' must be a number"),
        ({"roots": [7]}, "malformed"),
    ],
)
def test_a_bad_ranker_file_is_refused_naming_it(tmp_path, change, said):
    path = second_place_tree(tmp_path)
    data = json.loads(path.read_text())
    data.update(change)
    path.write_text(json.dumps(data))
    with pytest.raises(SetupError, match="reader ranker file") as caught:
        load_reader_ranker(path)
    assert str(path) in str(caught.value) and said in str(caught.value)


def test_a_missing_ranker_file_is_refused_with_the_command_that_writes_it(tmp_path):
    with pytest.raises(SetupError, match="does not exist .*bench/reader_rank.py"):
        load_reader_ranker(tmp_path / "nothing.json")


def test_only_an_other_or_kind_question_lets_the_trees_reach_past_two_contenders():
    """``CONTENDERS`` bounds the trees' choice for typed questions (person, place, date, number);
    for ``FREE_KINDS`` every candidate can win."""
    keys = ["a", "b", "c", "a"]
    linear = np.asarray([3.0, 2.0, 1.0, 0.5])
    trees = np.asarray([0.1, 0.2, 0.9, 0.0])  # the trees prefer the linear model's third answer
    assert reader_rank.held_to_contenders("other", keys, linear, trees) is trees
    assert reader_rank.held_to_contenders("kind", keys, linear, trees) is trees
    held = reader_rank.held_to_contenders("place", keys, linear, trees)
    assert int(np.argmax(held)) == 1 and held[2] < held[0] and held[2] < held[1]
    assert {"kind", "other"} == reader_rank.FREE_KINDS


def third_place_tree(tmp_path):
    """One tree worth 1 for a candidate the linear model ranks third or lower, 0 otherwise."""
    at = RANK_FEATURES.index("linear_rank")
    nodes = {"feature": [at, -1, -1], "threshold": [0.4, 0.0, 0.0], "left": [1, -1, -1], "right": [2, -1, -1]}
    nodes["value"] = [0.0, 1.0, 0.0]
    return tree_file(tmp_path, [0], nodes)


def test_read_takes_the_trees_pick_past_the_contenders_for_an_other_question(tmp_path, shipped):
    question = "What studio made the film Korvik Falls?"
    docs = [
        FILM,
        doc("Nordlys Studio", "Nordlys Studio is a Norwegian film company that made Korvik Falls in 1999."),
        PERSON,
    ]
    typed, _, found, scores = linear_order(question, docs)
    assert typed.kind == "other"
    shipped(third_place_tree(tmp_path))
    answer = read(question, docs).answer
    best = {}
    for c, s in zip(found, scores, strict=True):
        best[c.key] = max(s, best.get(c.key, -np.inf))
    top_two = sorted(best, key=lambda k: -best[k])[:2]
    assert answer_key(answer) not in top_two  # a typed question could not answer outside these


def test_a_person_question_lets_the_trees_reach_the_third_contender_and_no_further():
    """``CONTENDERS``: a person question's answer may be the linear model's third (round 9: it was
    in the tune halves' CV); a place, date or number question's stays within two."""
    keys = ["a", "b", "c", "d", "a"]
    linear = np.asarray([4.0, 3.0, 2.0, 1.0, 0.5])
    third = np.asarray([0.1, 0.2, 0.9, 0.0, 0.0])  # the trees prefer the linear model's third answer
    fourth = np.asarray([0.1, 0.2, 0.3, 0.9, 0.0])  # ... its fourth
    assert int(np.argmax(reader_rank.held_to_contenders("person", keys, linear, third))) == 2
    held = reader_rank.held_to_contenders("person", keys, linear, fourth)
    assert int(np.argmax(held)) == 2 and held[3] < held[2]
    for kind in ("place", "date", "number"):
        assert int(np.argmax(reader_rank.held_to_contenders(kind, keys, linear, third))) == 1, kind
