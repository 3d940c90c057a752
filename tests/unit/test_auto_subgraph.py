"""``auto`` runs the method it routes to as a LangGraph subgraph (``rag_graphs.nodes.subgraphs``).

So ``stop_before_answer`` stops inside the routed method, before its answer node (how
``rag-graphs eval --retrieval-only -m auto`` measures retrieval without an answer call); a thread
stopped or failed there resumes there, with nothing before it run again, under ``run`` and
``arun``; and a stream shows the routed method's steps and progress as they happen.

Scripted models on the demo corpus; the router is the chat model (``router="llm"``: one call),
and multi-hop questions go to ``fixed_step``, whose calls come in a known order (first_query,
intermediate, next_query, intermediate, generate).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import get_args, get_type_hints

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from rag_graphs.catalog import METHODS
from rag_graphs.eval import EvalOptions, evaluate
from rag_graphs.eval.rows import read_rows
from rag_graphs.methods import get_graph
from rag_graphs.methods.auto import route_kind
from rag_graphs.nodes.failures import RunFailed
from rag_graphs.run import Progress, Resumed, StepEvent, arun, run, stream
from tests import crash_worker as worker
from tests.unit import test_crash_resume as crash
from tests.unit.test_faults import Scripted, StatusError, scripted
from tests.unit.test_run import CHAIN, FIRST_HALF, QUESTION, SECOND_HALF

KIND = '{"kind": "multi_hop"}'
ROUTED = {"routes": "single_hop=naive,multi_hop=fixed_step", "router": "llm", "k": 1, "search_cache": 0}
NO_ANSWER = AssertionError("the answer must not be written")


class TwoWays(Scripted):
    """``Scripted`` with a native async path; ``ways`` says which path each call took."""

    ways: list = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.ways.append("sync")
        return Scripted._generate(self, messages, stop, **kwargs)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        self.ways.append("async")
        return Scripted._generate(self, messages, stop, **kwargs)


def _run(asynchronous: bool, *args, **kwargs) -> dict:
    """``run`` or ``arun`` (natively async: the routed graph is awaited, not run in a thread)."""
    return asyncio.run(arun(*args, **kwargs)) if asynchronous else run(*args, **kwargs)


def test_every_method_routes_may_name_is_a_subgraph_of_auto():
    routable = set(METHODS) - {"auto"}  # config.fields.check_route: every method but auto
    assert {name for name, _ in get_graph("auto").get_subgraphs()} == routable
    targets = set(get_args(get_type_hints(route_kind)["return"]))
    assert targets == routable | {"answer_directly"}  # the router's Literal names its nodes


@pytest.mark.parametrize("asynchronous", [False, True], ids=["run", "arun"])
def test_stop_before_answer_stops_inside_the_routed_method(loaded, make_context, asynchronous):
    model = scripted(KIND, *FIRST_HALF, *SECOND_HALF[:2], NO_ANSWER)
    out = _run(
        asynchronous, "auto", QUESTION, make_context(chat_model=model, **ROUTED), stop_before_answer=True
    )
    assert len(model.calls) == 5  # classify, then fixed_step's 2 queries and 2 intermediate answers
    assert out["stopped_before"] == "generate" and out["answer"] == "" and out["citations"] == []
    assert [s["node"] for s in out["steps"]] == ["classify", *CHAIN[:-1]]
    assert out["usage"]["llm_calls"] == 5 and out["usage"]["retrievals"] == 2
    # the context is the routed method's: the same ranking fixed_step stopped alone returns
    alone_model = scripted(*FIRST_HALF, *SECOND_HALF[:2], NO_ANSWER)
    alone = run(
        "fixed_step", QUESTION, make_context(chat_model=alone_model, **ROUTED), stop_before_answer=True
    )
    assert out["documents"] and [d.id for d in out["documents"]] == [d.id for d in alone["documents"]]


def test_stream_through_auto_yields_the_routed_methods_steps_and_progress_as_they_happen(
    loaded, make_context
):
    model = scripted(KIND, *FIRST_HALF, *SECOND_HALF)
    events = list(stream("auto", QUESTION, make_context(chat_model=model, **ROUTED)))
    result = events[-1].result
    steps = [e for e in events if isinstance(e, StepEvent)]
    assert [s.step["node"] for s in steps] == ["classify", *CHAIN] and result["answer"] == "Korvik [1]."
    assert [s.step for s in steps] == result["steps"]  # each step once, in order
    assert [s.number for s in steps] == list(range(1, len(CHAIN) + 2))
    progress = [e for e in events if isinstance(e, Progress)]
    first_retrieve = next(e for e in progress if e.node == "retrieve")
    answering = next(e for e in progress if e.node == "generate")
    # a node's progress comes before its step, and the routed method's steps are not held back to
    # the end of its run: its first retrieve step comes before its answer node starts
    assert events.index(first_retrieve) < events.index(steps[2]) < events.index(answering)


def test_a_thread_stopped_inside_the_routed_method_answers_when_asked_again(loaded, make_context, tmp_path):
    db = tmp_path / "checkpoints.sqlite"
    model = scripted(KIND, *FIRST_HALF, *SECOND_HALF[:2], NO_ANSWER)
    ctx = make_context(chat_model=model, **ROUTED)
    first = run("auto", QUESTION, ctx, thread_id="s", checkpoints=db, stop_before_answer=True)
    again = run("auto", QUESTION, ctx, thread_id="s", checkpoints=db, stop_before_answer=True)
    assert len(model.calls) == 5 and first["stopped_before"] == again["stopped_before"] == "generate"
    assert again["steps"] == first["steps"] and again["usage"] == first["usage"]
    assert [d.id for d in again["documents"]] == [d.id for d in first["documents"]]
    config = {"configurable": {"thread_id": "s"}}
    with SqliteSaver.from_conn_string(str(db)) as saver:  # LangGraph's view: the subgraph waits there
        state = get_graph("auto", checkpointer=saver).get_state(config, subgraphs=True)
    assert state.next == ("fixed_step",) and state.tasks[0].state.next == ("generate",)

    answer = scripted("Korvik [1].")
    events = list(
        stream("auto", QUESTION, make_context(chat_model=answer, **ROUTED), thread_id="s", checkpoints=db)
    )
    assert events[0] == Resumed("s", ("fixed_step",)) and len(answer.calls) == 1
    assert [e.step["node"] for e in events if isinstance(e, StepEvent)] == ["generate"]  # nothing redone
    result = events[-1].result
    assert result["answer"] == "Korvik [1]." and "stopped_before" not in result
    assert [s["node"] for s in result["steps"]] == ["classify", *CHAIN]
    assert result["usage"]["llm_calls"] == 6 and result["usage"]["retrievals"] == 2


@pytest.mark.parametrize("asynchronous", [False, True], ids=["run", "arun"])
def test_a_run_failed_inside_the_routed_method_resumes_at_the_failed_node(
    loaded, make_context, tmp_path, asynchronous
):
    thread = {"thread_id": "t", "checkpoints": tmp_path / "checkpoints.sqlite"}
    broken = scripted(KIND, *FIRST_HALF, StatusError(401, "bad key"))  # fails at next_query
    with pytest.raises(RunFailed, match="^next_query failed") as failed:
        _run(asynchronous, "auto", QUESTION, make_context(chat_model=broken, **ROUTED), **thread)
    assert [s["node"] for s in failed.value.result["steps"]] == ["classify", *CHAIN[:3], "next_query"]
    assert len(broken.calls) == 4

    fixed = TwoWays(script=list(SECOND_HALF), calls=[], ways=[])  # a rerun classify would misroute
    out = _run(asynchronous, "auto", QUESTION, make_context(chat_model=fixed, **ROUTED), **thread)
    assert len(fixed.calls) == 3  # next_query, intermediate, generate: classify and hop 1 did not run again
    assert fixed.ways == ["async" if asynchronous else "sync"] * 3  # arun awaits the routed graph
    assert out["answer"] == "Korvik [1]." and out["citations"]
    assert [s["node"] for s in out["steps"] if s["kind"] != "error"] == ["classify", *CHAIN]
    assert out["usage"]["llm_calls"] == 6 and out["usage"]["retrievals"] == 2  # nothing counted twice


def test_eval_retrieval_only_with_auto_makes_no_answer_call(tiny, make_context, tmp_path):
    """The examples router (no model call) sends the dataset's questions to fixed_step."""
    questions = [json.loads(line)["question"] for line in (tiny / "dev.jsonl").read_text().splitlines()]
    examples = tmp_path / "kinds.json"
    examples.write_text(json.dumps({"multi_hop": questions, "single_hop": ["Which year was it?"]}))
    model = scripted("Korvik [1].")  # every reply the same; counts the calls
    ctx = make_context(chat_model=model, k=2, routes="multi_hop=fixed_step", router_examples=str(examples))
    run_dir = evaluate(
        tiny,
        context=ctx,
        methods=["auto"],
        options=EvalOptions(
            retrieval_only=True,
            run_dir=tmp_path / "run",
            eval_store=str(tmp_path / "eval.db"),
            progress=False,
        ),
    )
    rows = read_rows(run_dir)
    assert len(model.calls) == 3 * 4  # per question fixed_step's 2 queries and 2 intermediate answers
    for row in rows:
        assert row["method"] == "auto" and row["error"] is None
        assert row["stopped_before"] == "generate" and row["prediction"] == "" and row["llm_calls"] == 4
        assert row["retrievals"] >= 1 and row["recall_at_5"] is not None and row["f1"] is None


def _subgraph_steps(db: Path, thread: str) -> list[int]:
    """The ``step`` of every checkpoint the routed method (a subgraph: its own namespace) saved."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            rows = conn.execute(
                "SELECT metadata FROM checkpoints WHERE thread_id = ? AND checkpoint_ns LIKE 'fixed_step:%'",
                (thread,),
            ).fetchall()
    except sqlite3.OperationalError:  # not created yet
        return []
    return sorted(json.loads(metadata)["step"] for (metadata,) in rows)


@pytest.mark.timeout(240)
def test_a_run_killed_inside_the_routed_method_resumes_there(tmp_path: Path) -> None:
    """A real process running ``auto`` is killed (``kill -9``) in fixed_step's third model call;
    another process resumes the thread: neither classify nor fixed_step's first hop runs again."""
    store, db, log = tmp_path / "crash.db", tmp_path / "checkpoints.sqlite", tmp_path / "calls.jsonl"
    common = ("graph", "--store", store, "--db", db, "--thread", "t", "--log", log, "--method", "auto")
    victim, output = crash.start_until_hang(tmp_path, common, 4, log)
    try:
        # fixed_step's intermediate (its step 4) is saved in the background: wait for it
        crash._wait_until(lambda: 4 in _subgraph_steps(db, "t"), victim, "the subgraph's step 4", output)
        crash._kill9(victim)
    finally:
        crash._stop(victim)
    killed = crash._jsonl(log)
    assert [(r["step"], r["event"]) for r in killed] == [
        ("classify", "call"),
        ("first_query", "call"),
        ("intermediate", "call"),
        ("next_query", "hang"),
    ]
    with SqliteSaver.from_conn_string(str(db)) as saver:
        state = get_graph("auto", checkpointer=saver).get_state(
            {"configurable": {"thread_id": "t"}}, subgraphs=True
        )
    assert state.next == ("fixed_step",) and state.tasks[0].state.next == ("next_query",)

    resumer, resumed = crash.resume_in_another_process(tmp_path, common)
    after = crash._jsonl(log)[len(killed) :]
    assert [(r["pid"], r["step"]) for r in after] == [(resumer.pid, s) for s in crash.STEPS[2:]]
    assert resumed["answer"] == worker.REPLIES["generate"] and resumed["pending"] == []
    assert [s["node"] for s in resumed["steps"]] == ["classify", *CHAIN]
    assert resumed["usage"]["llm_calls"] == 6 and resumed["usage"]["retrievals"] == 2  # none counted twice
