"""Explicit state, one loop-stop rule, and nodes native on both sync and async runs."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from rag_graphs.llm.calls import Batch, Call, adrive, drive
from rag_graphs.methods import get_graph
from rag_graphs.nodes.failures import RunFailed, guard
from rag_graphs.nodes.loop import ENOUGH, Budget, loop_stop
from rag_graphs.search.fusion import reciprocal_rank_fusion

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "In which town was the founder of the Velmora Institute born?"


def test_no_node_or_method_reads_the_steps_log():
    """``steps`` is output: nothing under nodes/ or methods/ reads it to decide. ``failures.py``
    copies the chain so far into a failed run's result (output again, and it decides nothing)."""
    reader = re.compile(r"""state\s*(\.get\(\s*|\[\s*)["']steps["']""")
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for folder in ("rag_graphs/nodes", "rag_graphs/methods")
        for path in sorted((ROOT / folder).glob("*.py"))
        if path.name != "failures.py"
        for n, line in enumerate(path.read_text().splitlines(), start=1)
        if reader.search(line)
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "state,budget,kwargs,expected",
    [
        ({}, Budget(0, 3, "hop"), {"done": True}, ("enough", ENOUGH)),
        (
            {"latest_repeated": True},
            Budget(0, 3, "hop"),
            {},
            ("repeated", "repeated query: the last search found nothing new"),
        ),
        ({}, Budget(3, 3, "hop"), {"next_query": "x"}, ("budget", "hop budget reached (3 hops)")),
        ({}, Budget(1, 3, "hop"), {"next_query": "  "}, ("no_query", "no next query proposed")),
        (
            {"searches": [{"query": "Who is X?", "doc_ids": []}]},
            Budget(1, 3, "hop"),
            {"next_query": "who is x"},
            ("repeated", "repeated query: who is x"),
        ),
        (
            {},
            Budget(1, 3, "follow-up"),
            {"next_query": "b", "seen": ["B?"]},
            ("repeated", "repeated query: b"),
        ),
        ({}, Budget(1, 3, "hop"), {"next_query": "new"}, None),
        ({}, Budget(2, 3, "agent step"), {}, None),
    ],
)
def test_one_loop_stop_rule(state, budget, kwargs, expected):
    stop = loop_stop(state, budget, **kwargs)
    assert (stop and (stop.kind, stop.reason)) == expected


def test_a_body_runs_the_same_on_both_drivers():
    seen = []

    def body():
        first = yield Call(_Echo(), "a")
        pair = yield Batch([_one("b"), _one("c")])
        try:
            yield Call(_Echo(fail=True), "d")
        except ValueError as exc:  # an error raised by a call surfaces at its yield
            seen.append(str(exc))
        return [first, *pair]

    assert drive(body()) == ["a", "b", "c"]
    assert asyncio.run(adrive(body())) == ["a", "b", "c"]
    assert seen == ["bad d", "bad d"]


def _one(text):
    return (yield Call(_Echo(), text))


class _Echo:
    """The smallest runnable-like object: returns its input, or fails."""

    def __init__(self, fail: bool = False):
        self.fail = fail

    def invoke(self, value, config=None):
        if self.fail:
            raise ValueError(f"bad {value}")
        return value

    async def ainvoke(self, value, config=None):
        return self.invoke(value, config)


class SlowGrader(GenericFakeChatModel):
    """Grades every passage 'correct' after a pause, recording how many calls overlap."""

    active: int = 0
    peak: int = 0
    lock: object = None

    def _track(self, delta: int) -> None:
        with self.lock:
            self.active += delta
            self.peak = max(self.peak, self.active)

    def _reply(self, messages) -> ChatResult:
        # CRAG's and Self-RAG's graders, and Self-RAG's checks (an unreadable check never passes)
        grade = '{"relevance": "correct", "score": 9, "retrieve": true, "grounded": true, "complete": true}'
        checking = str(messages[0].content).startswith("You check")  # Self-RAG's grounded/complete
        text = "Korvik [1]." if "Answer" in str(messages[-1].content)[-400:] and not checking else grade
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    def _generate(self, messages, *args, **kwargs):
        self._track(1)
        time.sleep(0.2)
        self._track(-1)
        return self._reply(messages)

    async def _agenerate(self, messages, *args, **kwargs):
        self._track(1)
        await asyncio.sleep(0.2)
        self._track(-1)
        return self._reply(messages)


def _grader() -> SlowGrader:
    return SlowGrader(messages=iter([]), lock=threading.Lock())


@pytest.mark.parametrize("method", ["crag", "self_rag"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_grading_runs_in_one_bounded_batch_on_both_entry_points(loaded, make_context, mode, method):
    model = _grader()
    ctx = make_context(chat_model=model, k=4, max_concurrency=3)  # Self-RAG's checks are 2: 3 is grading
    graph = get_graph(method)
    if mode == "sync":
        out = graph.invoke({"question": QUESTION}, context=ctx)
    else:
        out = asyncio.run(graph.ainvoke({"question": QUESTION}, context=ctx))
    graded = next(s for s in out["steps"] if s["kind"] == "grade")
    assert len(graded["doc_ids"]) == 4 and out["stop_reason"] == ENOUGH
    assert model.peak == 3  # side by side, never more than max_concurrency at once


def test_guard_awaits_an_async_node_and_keeps_the_chain():
    async def broken(state, runtime=None):
        await asyncio.sleep(0)
        raise KeyError("missing")

    wrapped = guard("broken", broken)
    state = {"question": "q", "steps": [{"node": "retrieve", "kind": "retrieve"}]}
    with pytest.raises(RunFailed) as failed:
        asyncio.run(wrapped(state))
    assert "broken failed (not retried" in str(failed.value)
    assert [s["node"] for s in failed.value.result["steps"]] == ["retrieve", "broken"]


@pytest.mark.parametrize("weight", [1.0, 3.0], ids=["plain-rrf", "first-hop-weighted"])
def test_a_multi_hop_run_returns_its_hops_fused_into_one_ranking(loaded, make_context, weight):
    """``documents`` is one ranking of every hop (weighted RRF; ``first_hop_weight`` 1 is plain RRF):
    plainly fused, hop two's best passage ranks near the top, not after hop one's tail; weighted,
    hop one's hits lead and hop two's follow. Every passage of both hops is kept either way."""
    replies = ["Ilsa Brandt founded it.", '{"enough": false, "next_query": "Where was Ilsa Brandt born?"}']
    replies += ["Korvik.", '{"enough": true}', "Korvik [1]."]
    ctx = make_context(*replies, k=3, first_hop_weight=weight)
    out = get_graph("iterative").invoke({"question": QUESTION}, context=ctx)
    hops = [s["doc_ids"] for s in out["steps"] if s["kind"] == "retrieve"]
    assert len(hops) == 2 and hops[0] != hops[1]
    rankings = [[Document(id=i, page_content="") for i in hop] for hop in hops]
    expected = reciprocal_rank_fusion(rankings, k=60, weights=[weight, 1.0])
    assert [d.id for d in out["documents"]] == [d.id for d in expected]
    assert {d.id for d in out["documents"]} == set(hops[0]) | set(hops[1])
    if weight == 1.0:
        assert out["documents"][1].id in {hops[0][0], hops[1][0]}  # hop two's best is not pushed to rank 4
    else:
        assert {d.id for d in out["documents"][:3]} == set(hops[0])  # a passage both found leads
    assert out["stop_reason"] == ENOUGH and out["usage"]["hops"] == 2
