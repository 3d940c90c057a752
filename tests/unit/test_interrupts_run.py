"""Waiting for a person through ``rag_graphs.run`` (a SQLite thread) and ``rag-graphs ask``: the run
stops with ``Waiting``, shows it again when asked again, and goes on with ``resume=``; the command
asks on a terminal, or prints what it waits for and exits with ``EXIT_WAITING``."""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from rag_graphs.cli import app
from rag_graphs.cli import ask as cli
from rag_graphs.run import Finished, Resumed, StepEvent, Waiting, arun, run, stream
from tests.unit.test_interrupts import PLAN, PLANNED, QUESTION, Recording, context

EDITED = ["Who founded the Velmora Institute?", "Where was #1 born?"]
SEARCHED = ["Who founded the Velmora Institute?", "Where was Ilsa Brandt born?"]


@pytest.fixture
def planned(tmp_path):
    """(context, recording retriever, checkpoints file) of a planned run that stops at its plan."""
    searched = Recording()
    ctx = context(tmp_path, *PLANNED, retriever=searched, k=1, interrupts=["plan"])
    return ctx, searched, tmp_path / "checkpoints.sqlite"


def test_a_run_waits_shows_it_again_and_goes_on_with_the_answer(planned):
    ctx, searched, db = planned
    events = list(stream("planned", QUESTION, ctx, thread_id="t", checkpoints=db))
    waiting, finished = events[-2:]
    assert isinstance(waiting, Waiting) and isinstance(finished, Finished) and finished.waiting
    assert waiting.thread_id == "t" and waiting.interrupts[0]["sub_questions"] == PLAN.split("\n")
    assert finished.result["interrupts"] == list(waiting.interrupts) and not finished.result.get("answer")
    again = list(stream("planned", QUESTION, ctx, thread_id="t", checkpoints=db))  # runs nothing
    assert [type(e) for e in again] == [Resumed, Waiting, Finished] and again[1] == waiting
    out = run("planned", QUESTION, ctx, thread_id="t", checkpoints=db, resume=EDITED)
    assert out["answer"] == "Korvik [1]." and "interrupts" not in out and searched.searched == SEARCHED
    assert run("planned", QUESTION, ctx, thread_id="t", checkpoints=db)["answer"] == "Korvik [1]."


def test_resume_on_an_async_run(planned):
    ctx, searched, db = planned
    assert asyncio.run(arun("planned", QUESTION, ctx, thread_id="a", checkpoints=db))["interrupts"]
    out = asyncio.run(arun("planned", QUESTION, ctx, thread_id="a", checkpoints=db, resume="approve"))
    assert out["answer"] == "Korvik [1]." and searched.searched == SEARCHED


def test_a_waiting_run_needs_a_thread_and_an_answer_needs_a_waiting_run(planned):
    ctx, _, db = planned
    with pytest.raises(ValueError, match="interrupts='plan' stops the run .* pass thread_id"):
        run("planned", QUESTION, ctx)
    with pytest.raises(ValueError, match="thread 'new' waits for no answer"):
        run("planned", QUESTION, ctx, thread_id="new", checkpoints=db, resume=True)


def _cli(monkeypatch, ctx) -> list[dict]:
    """``rag-graphs ask`` builds ``ctx`` (scripted model, recording retriever); what it was asked."""
    seen: list[dict] = []

    def built(store, collection, **overrides):
        seen.append(overrides)
        return ctx

    monkeypatch.setattr(cli, "_context", built)
    return seen


def test_cli_without_a_terminal_prints_what_it_waits_for_and_exits_with_its_code(planned, monkeypatch):
    ctx, searched, db = planned
    seen = _cli(monkeypatch, ctx)
    args = ["ask", QUESTION, "-m", "planned", "--thread-id", "c", "--checkpoints", str(db)]
    waits = CliRunner().invoke(app, [*args, "--interrupt", "plan", "--json"])
    assert waits.exit_code == cli.EXIT_WAITING == 3, waits.output
    shown = json.loads(waits.stdout)
    assert shown["thread_id"] == "c" and shown["interrupts"][0]["sub_questions"] == PLAN.split("\n")
    assert "--thread-id c --resume ANSWER" in waits.stderr and seen[0]["interrupts"] == ["plan"]
    done = CliRunner().invoke(
        app, [*args, "--resume", "Who founded the Velmora Institute?; Where was #1 born?"]
    )
    assert done.exit_code == 0, done.output
    assert "Korvik [1]." in done.stdout and searched.searched == SEARCHED


def test_cli_on_a_terminal_asks_and_goes_on(planned, monkeypatch):
    ctx, searched, db = planned
    _cli(monkeypatch, ctx)
    args = ["ask", QUESTION, "-m", "planned", "--checkpoints", str(db), "--interactive"]
    done = CliRunner().invoke(app, args, input="\n")  # Enter: approve
    assert done.exit_code == 0, done.output
    assert "waiting for you: plan" in done.stdout and "Where was #1 born?" in done.stdout
    assert "Korvik [1]." in done.stdout and searched.searched == SEARCHED
    assert "--interrupt needs a thread" in done.stderr  # a thread of its own, named


@pytest.mark.parametrize(
    "kind,text,expected",
    [
        ("plan", "a?; b?", ["a?", "b?"]),
        ("plan", "", "approve"),
        ("plan", '["a?"]', ["a?"]),
        ("web_search", "false", False),
        ("clarify", "Where; when?", "Where; when?"),
    ],
)
def test_typed_answers_are_read_by_kind(kind, text, expected):
    assert cli.parse_answer(kind, text) == expected


def test_a_run_waiting_inside_autos_routed_method_resumes_there_on_a_sqlite_thread(tmp_path):
    from tests.unit.test_interrupts import MULTI_HOP

    searched = Recording()
    settings = dict(k=1, router="llm", routes="multi_hop=planned", interrupts=["plan"])
    ctx = context(tmp_path, MULTI_HOP, *PLANNED, retriever=searched, **settings)
    db = tmp_path / "checkpoints.sqlite"
    events = list(stream("auto", QUESTION, ctx, thread_id="auto", checkpoints=db))
    assert isinstance(events[-2], Waiting) and events[-2].interrupts[0]["kind"] == "plan"
    steps = [e.step["node"] for e in events if isinstance(e, StepEvent)]
    assert steps == ["classify", "plan"]  # the routed method's steps as they happened, then the stop
    out = run("auto", QUESTION, ctx, thread_id="auto", checkpoints=db, resume=True)
    assert out["answer"] == "Korvik [1]." and searched.searched == SEARCHED
    assert [s["node"] for s in out["steps"]].count("classify") == 1
