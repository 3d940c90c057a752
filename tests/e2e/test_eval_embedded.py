"""The evaluator end to end on the embedded models, from the command line, on a user's own JSONL."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from rag_graphs.cli import app
from rag_graphs.eval import read_rows

pytestmark = pytest.mark.embedded

PASSAGES = [
    {
        "id": "v1",
        "title": "Velmora Institute",
        "text": "The Velmora Institute was founded by Ilsa Brandt in 1921.",
    },
    {"id": "b1", "title": "Ilsa Brandt", "text": "Ilsa Brandt was born in Korvik, a harbour town."},
    {"id": "n1", "title": "Granite", "text": "Granite is an igneous rock made of quartz and feldspar."},
]


def test_cli_eval_on_the_embedded_models_writes_rows_table_and_plots(tmp_path):
    questions = tmp_path / "mine.jsonl"
    rows = [
        {"id": "q1", "question": "Where was Ilsa Brandt born?", "answer": "Korvik", "supporting_ids": ["b1"]},
        {
            "id": "q2",
            "question": "Who founded the Velmora Institute?",
            "answer": "Ilsa Brandt",
            "supporting_ids": ["v1"],
        },
    ]
    questions.write_text("".join(json.dumps(r | {"passages": PASSAGES}) + "\n" for r in rows))
    args = ["eval", "--dataset", str(questions), "-m", "naive,ircot", "--out", str(tmp_path / "runs")]
    both = ["--reader", "extract,generate"]  # the two readers in one run, over the same retrieval
    result = CliRunner().invoke(app, [*args, *both, "--store", str(tmp_path / "eval.db"), "--k", "2"])
    assert result.exit_code == 0, result.output
    (run,) = (tmp_path / "runs").iterdir()
    stored = read_rows(run)
    assert sorted((r["method"], r["reader"], r["id"]) for r in stored) == [
        (m, reader, q) for m in ("ircot", "naive") for reader in ("extract", "generate") for q in ("q1", "q2")
    ]
    assert all(r["error"] is None and r["prediction"] for r in stored)
    # the extract reader answers without the model: naive makes no call; IRCoT still reasons with it
    assert all(r["llm_calls"] >= 1 for r in stored if r["reader"] == "generate" or r["method"] == "ircot")
    assert all(r["llm_calls"] == 0 for r in stored if r["reader"] == "extract" and r["method"] == "naive")
    # Three passages, k=2: naive's one search finds the gold passage of each question.
    assert all(r["recall"] == 1.0 for r in stored if r["method"] == "naive")
    assert "| naive | extract | 2 |" in result.output and "| naive | generate | 2 |" in result.output
    assert (run / "quality_vs_cost.png").is_file()


def test_eval_synth_questions_of_the_embedded_model_decode_under_its_grammar():
    """One question of ``eval synth`` on the real embedded model: llama.cpp takes the question
    grammar (``grammar=`` on the binding) and the reply is one question, for the answer chosen."""
    from langchain_core.documents import Document

    from rag_graphs.eval.synth import Seed, answers, question_prompt, question_writer
    from rag_graphs.llm.models import load_chat_model

    text = "Korvik\nKorvik is a small fishing town on the coast of Asterra. About 4,000 people live there."
    seed = Seed((Document(page_content=text, metadata={"title": "korvik"}, id="k"),))
    answer = next(a for a in answers(seed) if a.text == "4,000")
    reply = str(question_writer(load_chat_model("embedded")).invoke(question_prompt(seed, answer)).content)
    assert re.fullmatch(r"(Who|What|When|Where|Which|How|In what|In which) [^?\n]{5,200}\?", reply), reply
