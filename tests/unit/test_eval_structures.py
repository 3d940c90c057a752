"""``eval`` builds the derived structures its methods declare they need (``catalog.REQUIRES``)
before the first run: graphrag's community reports over a store the user ingested, counted and
printed first, refused above ``max_report_calls``; ``auto`` routes around what a store lacks by the
same declaration."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from typer.testing import CliRunner

from rag_graphs.catalog import REQUIRES
from rag_graphs.cli import app
from rag_graphs.config.errors import SetupError
from rag_graphs.eval import EvalOptions, evaluate, read_rows
from rag_graphs.eval.structures import needed
from rag_graphs.ingestion.community_reports import plan_reports
from rag_graphs.methods.auto import runnable
from rag_graphs.search.structures import has_structure
from tests.conftest import write_jsonl

REPLY = json.dumps(
    {  # reads as a community report and as graphrag's key points alike
        "title": "Velmora and Korvik",
        "summary": "Ilsa Brandt founded the Velmora Institute; she was born in Korvik.",
        "findings": ["Ilsa Brandt was born in Korvik."],
        "rating": 7,
        "points": [{"description": "Ilsa Brandt was born in Korvik.", "score": 80, "reports": [1]}],
    }
)


class Counting(GenericFakeChatModel):
    """Replies ``REPLY`` to every prompt and counts the calls."""

    calls: int = 0

    def _generate(self, *args, **kwargs):
        self.calls += 1
        return super()._generate(*args, **kwargs)


def counting() -> Counting:
    return Counting(messages=itertools.cycle([AIMessage(content=REPLY)]))


@pytest.fixture
def questions(tmp_path: Path) -> Path:
    """A user's questions about their own documents: question/answer rows, no passages."""
    return write_jsonl(
        tmp_path / "q.jsonl",
        [
            {"id": "q1", "question": "Who founded the Velmora Institute?", "answer": "Ilsa Brandt"},
            {"id": "q2", "question": "In which town was Ilsa Brandt born?", "answer": "Korvik"},
        ],
    )


def _options(tmp_path: Path, **overrides) -> EvalOptions:
    return EvalOptions(run_dir=tmp_path / "run", eval_store=str(tmp_path / "unused.db"), **overrides)


def test_graphrag_over_an_ingested_store_gets_its_reports_built_first(
    loaded, questions, make_context, tmp_path, capsys
):
    ctx = make_context(chat_model=counting(), reader="extract")
    assert not has_structure(ctx, "reports")
    calls = plan_reports(loaded).calls
    assert calls > 0

    run = evaluate(questions, ["graphrag", "naive"], context=ctx, options=_options(tmp_path))

    assert has_structure(ctx, "reports") and plan_reports(loaded).calls == 0  # all written
    rows = read_rows(run)
    assert sorted((r["method"], r["id"]) for r in rows) == [
        ("graphrag", "q1"),
        ("graphrag", "q2"),
        ("naive", "q1"),
        ("naive", "q2"),
    ]
    assert [r["error"] for r in rows] == [None] * 4  # no SetupError row
    assert all(r["retrievals"] > 0 for r in rows if r["method"] == "graphrag")
    printed = capsys.readouterr().err
    estimate = f"community reports: {calls} to write (~{calls} LLM calls)"
    assert estimate in printed and printed.index(estimate) < printed.index("community reports: communities")


def test_reports_above_the_limit_are_refused_before_any_call(loaded, questions, make_context, tmp_path):
    model = counting()
    ctx = make_context(chat_model=model)
    calls = plan_reports(loaded).calls
    with pytest.raises(SetupError) as refused:
        evaluate(questions, ["graphrag"], context=ctx, options=_options(tmp_path, max_report_calls=calls - 1))
    message = str(refused.value)
    assert f"~{calls} LLM calls" in message and f"--max-report-calls {calls - 1}" in message
    assert "rag-graphs graph communities" in message and "\n" not in message
    assert model.calls == 0 and not has_structure(ctx, "reports")
    assert read_rows(tmp_path / "run") == []


def test_the_declaration_decides_what_is_built(loaded, questions, make_context, tmp_path, monkeypatch):
    """A method that declares the RAPTOR tree gets it, whatever its name: eval reads
    ``catalog.REQUIRES``, not method names."""
    ctx = make_context(chat_model=counting(), search_mode="hybrid", reader="extract")
    assert needed(["naive"], ctx) == ()
    monkeypatch.setitem(REQUIRES, "naive", ("raptor_tree",))
    assert needed(["naive"], ctx) == ("raptor_tree",)
    assert not has_structure(ctx, "raptor_tree")
    evaluate(questions, ["naive"], context=ctx, options=_options(tmp_path, progress=False))
    assert has_structure(ctx, "raptor_tree")


def test_search_settings_add_what_they_search(make_context):
    assert needed(["naive"], make_context(search_mode="auto")) == ("entity_graph",)
    assert needed(["naive"], make_context(search_mode="hybrid", search_unit="sentence")) == ("sentences",)
    assert needed(["raptor", "graphrag"], make_context(search_mode="hybrid")) == (
        "entity_graph",
        "reports",
        "raptor_tree",
    )


def test_auto_routes_around_what_the_declaration_says_is_missing(loaded, make_context, monkeypatch):
    ctx = make_context()
    assert runnable("hyde", ctx) == ("hyde", "")
    monkeypatch.setitem(REQUIRES, "hyde", ("raptor_tree",))
    assert runnable("hyde", ctx) == ("naive", " (no RAPTOR tree for 'test', so not hyde)")


def test_cli_eval_passes_the_report_call_limit(questions, tmp_path, monkeypatch):
    import rag_graphs.eval

    seen: list[EvalOptions] = []

    def refuse(dataset, methods, *, context, options):
        seen.append(options)
        raise SetupError(f"over the limit ({options.max_report_calls})")

    monkeypatch.setattr(rag_graphs.eval, "evaluate", refuse)
    args = ["eval", "--dataset", str(questions), "-m", "graphrag,naive", "--store", str(tmp_path / "s.db")]
    result = CliRunner().invoke(app, [*args, "--max-report-calls", "7"])
    assert result.exit_code == 1 and "error: over the limit (7)" in result.output
    assert CliRunner().invoke(app, args).exit_code == 1 and seen[-1].max_report_calls == 200


def test_a_method_needing_a_structure_is_refused_on_the_users_own_retriever(questions, tmp_path):
    """Nothing to build in (no store): one line naming the method, the structure and its command,
    before any run; a method needing nothing derived is not refused."""
    from tests.unit.test_own_retriever import _own, _store

    ctx = _own(tmp_path, retriever=_store())
    assert needed(["naive"], ctx) == ()  # graph search is the store's: the retriever is searched
    with pytest.raises(SetupError) as refused:
        evaluate(questions, ["naive", "graphrag"], context=ctx, options=_options(tmp_path, progress=False))
    message = str(refused.value)
    assert "graphrag needs the entity graph and community reports" in message and "\n" not in message
    assert "rag-graphs graph communities" in message and "own retriever" in message
    assert read_rows(tmp_path / "run") == [] and not (tmp_path / "no-store").exists()
