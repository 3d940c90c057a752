"""``rag-graphs eval synth`` (``rag_graphs.eval.synth``): questions from the user's own store, end
to end with a scripted chat model: answers chosen first from the passages' candidate spans, the
model writing only the question, each draft checked (round trip through the extractive reader
included), rows in the evaluator's format, and the evaluator runs on them."""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import SimpleChatModel
from typer.testing import CliRunner

from rag_graphs.cli import app
from rag_graphs.eval import EvalOptions, evaluate, load_dataset, read_rows
from rag_graphs.eval.synth import (
    QUESTION_GRAMMAR,
    Answer,
    Draft,
    Seed,
    answers,
    as_written,
    check,
    question_in,
    seeds,
    synthesize,
)
from rag_graphs.llm.llama import LlamaChat

_ASKED = re.compile(r'whose answer is "(.*)"\.\s*$', re.S)
_FENCED = re.compile(r"<passage>\n(.*?)\n</passage>", re.S)
CANNED = {
    "1987": "When was the Velmora Institute founded?",
    "Ilsa Brandt": "Who founded the Velmora Institute?",
    "Korvik": "Where was Ilsa Brandt born?",
    "4,000": "How many people live in Korvik?",
    "Petrel-4": "What is the best-known glider of the Velmora Institute?",
    "2015": "When did the Petrel-4 cross the Sorven Sea?",
    "1992": "When was the Halden Foundation founded?",
    "Tomas Reyn": "Who founded the Halden Foundation?",
    "Lunmar": "What is the capital of Asterra?",
    "seventeen": "At what age did Ilsa Brandt leave Korvik?",
}
"""Questions the extractive reader answers right on the demo corpus (its round trip holds)."""
ECHO = {"2009", "the Sorven Sea", "Tomas Reyn"}
"""Answers the scripted writer gives away in its question (as SmolLM2 does)."""


def _ilsa() -> Document:
    return Document(
        page_content="Ilsa Brandt\nBrandt was born in Korvik in 1941. She left Korvik at seventeen.",
        metadata={"title": "ilsa_brandt"},
        id="ilsa",
    )


def _velmora() -> Document:
    return Document(
        page_content="The Velmora Institute\nThe Velmora Institute is a research centre. It was founded in "
        "1987 by the engineer Ilsa Brandt, who led it until 2009.",
        metadata={"title": "velmora_institute"},
        id="velmora",
    )


class Writer(SimpleChatModel):
    """Writes the question of the answer its prompt asks for: a right one for the answers in
    ``CANNED``, one that gives the answer away for those in ``ECHO``, and one about something
    else ("What is the purpose of the passage?") for the rest; keeps every prompt and answer."""

    prompts: list[str] = []
    asked: list[str] = []

    @property
    def _llm_type(self) -> str:
        return "scripted-writer"

    def _call(self, messages: list, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> str:
        text = "\n".join(str(m.content) for m in messages)
        self.prompts.append(text)
        answer = _ASKED.search(text).group(1)
        self.asked.append(answer)
        if answer in ECHO:
            return f"Sure! Here is one:\nQuestion: What do the passages say about {answer}?"
        return CANNED.get(answer, "What is the purpose of the passage?")


def test_seeds_mix_bridge_pairs_joined_by_an_entity_and_single_passages(loaded):
    drawn = list(seeds(loaded, 12, seed=1))
    bridges = [s for s in drawn if s.entity]
    assert bridges and len(bridges) < len(drawn)
    for s in bridges:
        assert len(s.passages) == 2 and s.passages[0].id != s.passages[1].id
    assert [s.passages for s in drawn] == [s.passages for s in seeds(loaded, 12, seed=1)]  # seeded


def test_answers_are_candidate_spans_not_the_subject_a_heading_nor_the_joining_entity():
    single = [(a.text, a.label, a.passage) for a in answers(Seed((_velmora(),)))]
    assert single == [("1987", "DATE", 0), ("Ilsa Brandt", "PERSON", 0), ("2009", "DATE", 0)]
    # bridged by Ilsa Brandt: never her name (whole or part), never what both passages hold
    both = Document(
        page_content="Ilsa Brandt\nBrandt was born in Korvik in 1987.", metadata={"title": "x"}, id="b"
    )
    bridge = [(a.text, a.passage) for a in answers(Seed((_velmora(), both), "Ilsa Brandt"))]
    assert bridge == [("2009", 0), ("Korvik", 1)]
    # "Korvik" twice is one answer
    assert [a.text for a in answers(Seed((_ilsa(),)))] == ["Korvik", "1941"]
    # spaCy's dates without a digit are no answer
    vague = Document(page_content="The market opens every winter for twenty years.", id="w")
    assert answers(Seed((vague,))) == []


def test_check_keeps_only_questions_with_answers_in_a_passage_not_given_away_and_not_repeated():
    seed = Seed((Document(page_content="Ilsa Brandt was born in Korvik in 1941.", id="a"),))
    assert check(Draft(question="Where was Ilsa Brandt born?", answer="Korvik"), seed, set()) is None
    assert (
        check(Draft(question="Where?", answer="Paris"), seed, set()) == "answer not in a supporting passage"
    )
    assert (
        check(Draft(question="Is Korvik a town?", answer="Korvik"), seed, set())
        == "answer given in the question"
    )
    assert check(
        Draft(question="Where was Ilsa Brandt born?", answer="korvik"), seed, {"where was ilsa brandt born"}
    ) == ("repeated question")
    assert check(Draft(question="", answer="Korvik"), seed, set()) == "empty question or answer"
    # what SmolLM2 wrote on the demo corpus: a title, not a question (it was kept before)
    assert check(Draft(question="Ilsa Brandt", answer="Korvik"), seed, set()) == "not a question"
    assert check(Draft(question="Ilsa's birthplace?", answer="Korvik"), seed, set()) == "not a question"
    # the round trip: the reader answers a question about her birth year with 1941, not Korvik
    assert (
        check(Draft(question="When was Ilsa Brandt born?", answer="Korvik"), seed, set())
        == "the reader answers otherwise"
    )
    assert check(Draft(question="When was Ilsa Brandt born?", answer="1941"), seed, set()) is None


def test_the_question_is_read_off_a_chatty_reply():
    assert question_in('Sure! Here is one:\nQuestion: "Where was Ilsa Brandt born?"') == (
        "Where was Ilsa Brandt born?"
    )
    assert question_in("**Q1: Who founded it?**\nAnswer: Ilsa Brandt") == "Who founded it?"
    assert question_in("The Velmora Institute") == "The Velmora Institute"  # check: not a question
    assert question_in("  ") == ""


def test_a_bridge_question_that_names_its_entity_is_a_one_hop_row_on_the_answers_passage():
    seed = Seed((_velmora(), _ilsa()), "Ilsa Brandt")
    answer = Answer("Korvik", "GPE", 1)
    assert as_written(seed, answer, "Where was the founder of the Velmora Institute born?") == seed
    named = as_written(seed, answer, "Where was Ilsa Brandt born?")
    assert named.entity is None and [d.id for d in named.passages] == ["ilsa"]
    # a file-name entity ("ilsa_brandt") is named as words
    filed = as_written(Seed(seed.passages, "ilsa_brandt"), answer, "Where was Ilsa Brandt born?")
    assert filed.entity is None


def test_synth_writes_checked_rows_the_evaluator_runs_on(loaded, make_context, tmp_path):
    model = Writer(prompts=[], asked=[])
    result = synthesize(loaded, model, tmp_path / "q.jsonl", n=6, seed=0, progress=False)
    rows = [json.loads(line) for line in (tmp_path / "q.jsonl").read_text().splitlines()]
    assert result.written == len(rows) == 6
    # the scripted give-aways and off-topic questions were drawn and dropped (below: every kept
    # question is a canned one), as were repeats and seeds without an answer; the reasons are
    # checked as a set the drafts may fall in, not as counts
    assert any(a in ECHO or a not in CANNED for a in model.asked)
    reasons = {"answer given in the question", "the reader answers otherwise", "repeated question"}
    assert result.rejected and set(result.rejected) <= reasons | {"no answer in the passages"}
    assert len({r["question"] for r in rows}) == 6
    texts = {d.id: d for d in loaded.get([i for r in rows for i in r["supporting_ids"]])}
    for r in rows:
        # the answer was chosen first, among its passages' candidates, and asked for in a prompt
        assert r["answer"] in model.asked and r["question"] == CANNED[r["answer"]]
        support = tuple(texts[i] for i in r["supporting_ids"])
        assert r["answer"] in {a.text for a in answers(Seed(support))}
        assert r["hops"] == len(r["supporting_ids"]) and r["answer"] in " ".join(
            d.page_content for d in support
        )
    # a bridge pair's prompt shows both passages fenced (its relabelling: the test above)
    bridge_prompts = [p for p in model.prompts if "Both passages mention" in p]
    assert bridge_prompts and all(p.count("<passage>\n") == 2 for p in bridge_prompts)
    assert all(r["hops"] == (2 if r["type"] == "bridge" else 1) for r in rows)
    single = next(p for p in model.prompts if "Both passages mention" not in p)
    assert single.count("<passage>\n") == 1  # the passage, fenced as data
    dataset = load_dataset(tmp_path / "q.jsonl")  # the evaluator's format
    assert [e.id for e in dataset.examples] == [f"synth-{i}" for i in range(1, 7)]
    run = evaluate(
        dataset,
        ["naive"],
        context=make_context(k=4),
        options=EvalOptions(retrieval_only=True, run_dir=tmp_path / "run", progress=False),
    )
    scored = read_rows(run)
    assert len(scored) == 6 and all(r["recall_at_5"] is not None for r in scored)


class _Llama:
    """Stands for ``llama_cpp.Llama``: keeps each request, writes one question."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def reset(self) -> None:
        pass

    def create_chat_completion(self, **request: Any) -> dict[str, Any]:
        self.requests.append(request)
        reply = {"role": "assistant", "content": "Who founded the Velmora Institute?"}
        return {"choices": [{"index": 0, "message": reply, "finish_reason": "stop"}], "usage": {}}


def test_the_embedded_model_writes_under_the_question_grammar_in_plain_text(loaded, tmp_path):
    client = _Llama()
    model = LlamaChat(model_path="/models/small.gguf", client=client)
    synthesize(loaded, model, tmp_path / "q.jsonl", n=2, seed=0, progress=False)
    assert client.requests
    for request in client.requests:
        assert request["grammar"]._grammar == QUESTION_GRAMMAR
        assert "response_format" not in request  # no JSON: SmolLM2 wrote titles under it
    assert QUESTION_GRAMMAR.startswith('root ::= ("Who" | "What"') and QUESTION_GRAMMAR.endswith('"?"')


def test_eval_synth_from_the_command_line(loaded, tmp_path, monkeypatch):
    import rag_graphs.cli.choose as choose

    monkeypatch.setattr(choose, "_synth_model", lambda spec: Writer(prompts=[], asked=[]))
    monkeypatch.setattr(choose, "_synth_index", lambda store, collection: loaded)
    out = tmp_path / "q.jsonl"
    result = CliRunner().invoke(app, ["eval", "synth", "--out", str(out), "--n", "3"])
    assert result.exit_code == 0, result.output
    assert "wrote 3 questions" in result.output and len(out.read_text().splitlines()) == 3
    bad = CliRunner().invoke(app, ["eval", "nonsense"])
    assert bad.exit_code != 0 and "'nonsense'" in bad.output


def test_the_same_corpus_in_another_folder_draws_the_same_seeds(tmp_path, store_uri, fake_embeddings):
    """A chunk id hashes its file's path, so seeds ordered by id were drawn differently from a
    fresh clone (this file's first test wrote 5 rows in one checkout and 6 in another); they are
    ordered by content now."""
    from rag_graphs.ingestion import IngestOptions, ingest
    from rag_graphs.store import ChunkIndex

    drawn = []
    for name in ("here", "elsewhere"):
        folder = tmp_path / name / "corpus"
        folder.mkdir(parents=True)
        for i, place in enumerate(("Korvik", "Lunmar", "Velm", "Osric", "Tessin", "Arden")):
            (folder / f"note{i}.md").write_text(
                f"# {place}\n\n{place} is a harbour town; Ilsa Brandt visited {place}."
            )
        index = ChunkIndex(uri=store_uri, collection=f"c_{name}", embeddings=fake_embeddings)
        ingest([folder], index=index, options=IngestOptions(progress=False, timeout=None))
        drawn.append([[d.page_content for d in s.passages] for s in seeds(index, 8, seed=3)])
    assert drawn[0] and drawn[0] == drawn[1]
