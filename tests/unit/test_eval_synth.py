"""``rag-graphs eval synth`` (``rag_graphs.eval.synth``): questions from the user's own store, end
to end with a scripted chat model: bridge pairs and single passages, checked, in the evaluator's
format, and the evaluator runs on them."""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.language_models import SimpleChatModel
from typer.testing import CliRunner

from rag_graphs.cli import app
from rag_graphs.eval import EvalOptions, evaluate, load_dataset, read_rows
from rag_graphs.eval.synth import Draft, Seed, check, seeds, synthesize

_FENCED = re.compile(r"<passage>\n(.*?)\n</passage>", re.S)
_NAME = re.compile(r"\b[A-Z][a-z]{3,}\b")


class Writer(SimpleChatModel):
    """Writes a question about the first passage's first name-like word and answers with the
    last passage's last one; every fourth draft repeats the first question, every fifth answers
    with a word no passage has."""

    prompts: list[str] = []

    @property
    def _llm_type(self) -> str:
        return "scripted-writer"

    def _call(self, messages: list, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> str:
        text = "\n".join(str(m.content) for m in messages)
        self.prompts.append(text)
        passages = _FENCED.findall(text)
        first, last = _NAME.findall(passages[0]), _NAME.findall(passages[-1])
        n = len(self.prompts)
        question = "Who is asked about first?" if n % 4 == 0 else f"Question {n}: what goes with {first[0]}?"
        answer = "Zanzibarian" if n % 5 == 0 else last[-1]
        return json.dumps({"question": question, "answer": answer})


def test_seeds_mix_bridge_pairs_joined_by_an_entity_and_single_passages(loaded):
    drawn = list(seeds(loaded, 12, seed=1))
    bridges = [s for s in drawn if s.entity]
    assert bridges and len(bridges) < len(drawn)
    for s in bridges:
        assert len(s.passages) == 2 and s.passages[0].id != s.passages[1].id
    assert [s.passages for s in drawn] == [s.passages for s in seeds(loaded, 12, seed=1)]  # seeded


def test_check_keeps_only_questions_with_answers_in_a_passage_not_given_away_and_not_repeated():
    from langchain_core.documents import Document

    seed = Seed((Document(page_content="Ilsa Brandt was born in Korvik.", id="a"),))
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


def test_synth_writes_checked_rows_the_evaluator_runs_on(loaded, make_context, tmp_path):
    model = Writer(prompts=[])
    result = synthesize(loaded, model, tmp_path / "q.jsonl", n=6, seed=0, progress=False)
    rows = [json.loads(line) for line in (tmp_path / "q.jsonl").read_text().splitlines()]
    assert result.written == len(rows) == 6
    assert result.rejected  # the scripted repeats and foreign answers were dropped
    assert set(result.rejected) <= {"repeated question", "answer not in a supporting passage"}
    assert len({r["question"] for r in rows}) == 6
    assert {r["type"] for r in rows} == {"bridge", "single"}
    texts = {d.id: d.page_content for d in loaded.get([i for r in rows for i in r["supporting_ids"]])}
    for r in rows:
        assert r["hops"] == len(r["supporting_ids"]) and r["answer"] in " ".join(
            texts[i] for i in r["supporting_ids"]
        )
    bridge = next(p for p in model.prompts if "Both passages mention" in p)
    assert bridge.count("<passage>\n") == 2  # the two passages, fenced as data
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


def test_eval_synth_from_the_command_line(loaded, tmp_path, monkeypatch):
    import rag_graphs.cli.choose as choose

    monkeypatch.setattr(choose, "_synth_model", lambda spec: Writer(prompts=[]))
    monkeypatch.setattr(choose, "_synth_index", lambda store, collection: loaded)
    out = tmp_path / "q.jsonl"
    result = CliRunner().invoke(app, ["eval", "synth", "--out", str(out), "--n", "3"])
    assert result.exit_code == 0, result.output
    assert "wrote 3 questions" in result.output and len(out.read_text().splitlines()) == 3
    bad = CliRunner().invoke(app, ["eval", "nonsense"])
    assert bad.exit_code != 0 and "'nonsense'" in bad.output
