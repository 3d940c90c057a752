"""The auto router's default classifier: nearest labelled example questions."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings

from rag_graphs.methods import get_graph
from rag_graphs.text.question_kinds import (
    CONFIDENT,
    KINDS,
    classify_by_examples,
    examples_file,
    load_examples,
)


class TableEmbeddings(Embeddings):
    """Vectors looked up in a table, so similarities are exact and known."""

    def __init__(self, table: dict[str, list[float]]):
        self.table = table
        self.embedded = 0  # texts embedded so far

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.embedded += len(texts)
        return [self.table[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def write(tmp_path: Path, examples: dict) -> Path:
    path = tmp_path / "kinds.json"
    path.write_text(json.dumps(examples), encoding="utf-8")
    return path


EXAMPLES = {
    "_comment": "ignored",
    "no_retrieval": ["hello"],
    "single_hop": ["where born", "who wrote"],
    "multi_hop": ["where was the founder born"],
}
TABLE = {
    "hello": [1.0, 0.0, 0.0],
    "where born": [0.0, 1.0, 0.0],
    "who wrote": [0.0, 0.9, 0.1],
    "where was the founder born": [0.0, 0.0, 1.0],
}


def test_a_question_takes_the_kind_of_its_weighted_nearest_examples(tmp_path):
    path = write(tmp_path, EXAMPLES)
    # nearest is multi_hop (0.8) but the two single-hop examples together outvote it (0.6 + 0.68)
    emb = TableEmbeddings(TABLE | {"q": [0.0, 0.6, 0.8]})
    vote = classify_by_examples("q", emb, path, neighbours=3)
    assert vote.kind == "single_hop" and vote.nearest == "who wrote"
    assert vote.score == pytest.approx(0.6 + (0.54 + 0.08) / (0.9**2 + 0.1**2) ** 0.5)
    # with one neighbour, the nearest alone decides
    assert classify_by_examples("q", emb, path, neighbours=1).kind == "multi_hop"


def test_examples_are_embedded_once_per_model_and_file_version(tmp_path):
    path = write(tmp_path, EXAMPLES)
    emb = TableEmbeddings(TABLE | {"q": [0.0, 1.0, 0.0]})
    for _ in range(3):
        classify_by_examples("q", emb, path)
    assert emb.embedded == 4 + 3  # the 4 examples once, then each question
    other = TableEmbeddings(emb.table)
    classify_by_examples("q", other, path)
    assert other.embedded == 4 + 1  # another model embeds the examples itself
    path.write_text(json.dumps(EXAMPLES | {"single_hop": ["who wrote"]}), encoding="utf-8")
    os.utime(path, (1, 1))  # a new version of the file (mtime differs)
    classify_by_examples("q", other, path)
    assert other.embedded == 5 + 3 + 1


@pytest.mark.parametrize(
    "vector,expected",
    [
        ([1.0, 0.0, 0.0], "no_retrieval"),  # identical to the greeting: confident
        ([CONFIDENT + 0.01, 0.0, 0.0], "no_retrieval"),  # only direction counts for cosine
        ([0.35, 0.2, 0.9], "multi_hop"),  # greeting not nearest: a retrieval kind instead
    ],
)
def test_skipping_retrieval_needs_a_confident_nearest_example(tmp_path, vector, expected):
    examples = {"no_retrieval": ["hello", "hi", "thanks"], "multi_hop": ["where was the founder born"]}
    table = TABLE | {"hi": [0.9, 0.0, 0.44], "thanks": [0.9, 0.0, 0.44], "q": vector}
    assert classify_by_examples("q", TableEmbeddings(table), write(tmp_path, examples)).kind == expected


def test_a_far_question_is_not_sent_away_from_retrieval(tmp_path):
    """Three greetings outvote one multi-hop example, but none is CONFIDENT-similar."""
    examples = {"no_retrieval": ["a", "b", "c"], "multi_hop": ["m"]}
    table = {"a": [1, 0.3, 0], "b": [1, 0.3, 0.05], "c": [1, 0.3, 0.1], "m": [0, 1, 0], "q": [0.25, 0.3, -1]}
    vote = classify_by_examples("q", TableEmbeddings(table), write(tmp_path, examples))
    assert vote.kind == "multi_hop"


def test_the_shipped_examples_cover_every_kind():
    examples = load_examples(examples_file(None))
    assert set(examples) == set(KINDS) and all(len(qs) >= 10 for qs in examples.values())


@pytest.mark.parametrize(
    "content,message",
    [
        ("{not json", "not valid JSON"),
        ('["a list"]', "expected a JSON object"),
        ('{"no_retrieval": ["hi"], "chitchat": ["yo"]}', "unknown question kind 'chitchat'"),
        ('{"no_retrieval": ["hi"], "multi_hop": []}', "'multi_hop' must be a non-empty list"),
        ('{"no_retrieval": ["hi"], "multi_hop": ["ok", 3]}', "'multi_hop' must be a non-empty list"),
        ('{"no_retrieval": ["hi"]}', "at least two kinds"),
    ],
)
def test_a_bad_examples_file_is_refused_naming_it(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message) as error:
        load_examples(path)
    assert str(path) in str(error.value)


def test_a_missing_examples_file_names_the_setting(tmp_path):
    with pytest.raises(FileNotFoundError, match="RagContext.router_examples file not found"):
        examples_file(str(tmp_path / "nope.json"))


def test_auto_routes_by_examples_without_a_model_call(loaded, make_context, fake_embeddings, tmp_path):
    """Fake embeddings: a question equal to an example has similarity 1 with it."""
    question = "Where was the founder of the Velmora Institute born?"
    path = write(tmp_path, {"single_hop": ["Who wrote it?", "Which year?"], "multi_hop": [question]})
    ctx = make_context("q1", "a1", "q2", "a2", "Korvik [1].", k=2, router_examples=str(path))
    ctx.routes = "single_hop=naive,multi_hop=fixed_step"
    out = get_graph("auto").invoke({"question": question}, context=ctx)
    assert out["steps"][0]["node"] == "classify"
    assert out["steps"][0]["text"] == (
        f"multi_hop -> fixed_step (nearest example: {question!r}, similarity 1.00)"
    )
    assert out["answer"] == "Korvik [1]." and out["usage"]["llm_calls"] == 5  # fixed_step's calls only
    assert out["usage"]["retrievals"] >= 1
