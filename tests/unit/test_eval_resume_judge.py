"""``rag-graphs eval --resume`` judges with the run's own ``--judge`` unless told otherwise (issue 29)."""

from __future__ import annotations

import itertools
import json

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from typer.testing import CliRunner

import rag_graphs.cli.evaluate as cli_evaluate
import rag_graphs.eval
from rag_graphs.cli import app
from rag_graphs.eval import EvalOptions, evaluate
from rag_graphs.eval.rows import CONFIG, read_config


@pytest.fixture
def asked(monkeypatch) -> list[tuple[str | None, str | None]]:
    """(spec the judges were loaded from, judge recorded by evaluate) of each CLI eval."""
    seen: list[tuple[str | None, str | None]] = []
    loaded: list[str | None] = []

    def judges(spec):
        loaded.append(spec)
        return []

    def fake_evaluate(dataset, methods, **kwargs):
        seen.append((loaded[-1], kwargs["options"].judge))
        raise ValueError("stop here")

    monkeypatch.setattr(cli_evaluate, "_judges", judges)
    monkeypatch.setattr(rag_graphs.eval, "evaluate", fake_evaluate)
    return seen


def _run_dir(tmp_path, tiny, **stored):
    run = tmp_path / "run"
    run.mkdir()
    (run / CONFIG).write_text(json.dumps({"dataset": str(tiny), "methods": ["naive"], "k": 4, **stored}))
    return run


def test_a_resumed_run_judges_with_its_stored_judge(tiny, tmp_path, asked):
    run = _run_dir(tmp_path, tiny, judge="openai:judge-model")
    store = ["--store", str(tmp_path / "s.db")]
    CliRunner().invoke(app, ["eval", "--resume", str(run), *store])
    CliRunner().invoke(app, ["eval", "--resume", str(run), "--judge", "ollama:other", *store])
    assert asked == [("openai:judge-model", "openai:judge-model"), ("ollama:other", "ollama:other")]


def test_a_run_without_a_judge_resumes_without_one(tiny, tmp_path, asked):
    run = _run_dir(tmp_path, tiny)  # a run from before the judge was recorded, or never judged
    CliRunner().invoke(app, ["eval", "--resume", str(run), "--store", str(tmp_path / "s.db")])
    assert asked == [(None, None)]


def test_evaluate_records_the_judge_and_a_resume_keeps_it(tiny, make_context, tmp_path):
    def ctx():
        model = GenericFakeChatModel(messages=itertools.cycle([AIMessage(content="Korvik [1].")]))
        return make_context(chat_model=model, k=2)

    common = dict(run_dir=tmp_path / "run", eval_store=str(tmp_path / "eval.db"), progress=False)
    run = evaluate(
        tiny, ["naive"], context=ctx(), options=EvalOptions(**common, limit=1, judge="openai:judge-model")
    )
    assert read_config(run)["judge"] == "openai:judge-model"
    evaluate(
        tiny, ["naive"], context=ctx(), options=EvalOptions(**common, limit=1)
    )  # resumed from Python, no judge named
    assert read_config(run)["judge"] == "openai:judge-model"
