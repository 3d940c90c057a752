"""The ways users run a compiled graph: sync and async, streamed, and with their own checkpointer."""

from __future__ import annotations

import asyncio

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from rag_graphs.methods import get_graph

QUESTION = "Where was Ilsa Brandt born?"
CONTRACT = {"answer", "citations", "documents", "steps", "usage"}


def test_ainvoke_and_astream_keep_the_contract(loaded, make_context):
    graph = get_graph("naive")

    async def run():
        out = await graph.ainvoke({"question": QUESTION}, context=make_context("Korvik [1].", k=2))
        events = [
            (mode, chunk)
            async for mode, chunk in graph.astream(
                {"question": QUESTION},
                context=make_context("Korvik [1].", k=2),
                stream_mode=["custom", "values"],
            )
        ]
        return out, events

    out, events = asyncio.run(run())
    assert set(out) >= CONTRACT and out["answer"] == "Korvik [1]." and out["citations"]
    custom = [c for m, c in events if m == "custom"]
    assert {c["node"] for c in custom} >= {"retrieve", "generate"}
    assert [c for m, c in events if m == "values"][-1]["answer"] == "Korvik [1]."


def test_concurrent_ainvokes_share_one_store_safely(loaded, make_context):
    graph = get_graph("naive")

    async def run():
        contexts = [make_context(f"Answer {i} [1].", k=2) for i in range(8)]
        return await asyncio.gather(*(graph.ainvoke({"question": QUESTION}, context=c) for c in contexts))

    outs = asyncio.run(run())
    assert sorted(o["answer"] for o in outs) == sorted(f"Answer {i} [1]." for i in range(8))
    assert all(o["citations"] and o["usage"]["retrievals"] == 1 for o in outs)


@pytest.mark.parametrize("method", ["naive", "iterative"])
def test_a_caller_checkpointer_saves_the_run_under_its_thread_id(loaded, make_context, method):
    saver = InMemorySaver()
    graph = get_graph(method, checkpointer=saver)
    replies = (
        ["Korvik [1]."] if method == "naive" else ["Brandt founded it.", '{"enough": true}', "Korvik [1]."]
    )
    config = {"configurable": {"thread_id": "t-1"}}
    out = graph.invoke({"question": QUESTION}, config=config, context=make_context(*replies, k=2))
    state = graph.get_state(config)
    assert state.values["answer"] == out["answer"] and not state.next  # finished, saved
    history = list(graph.get_state_history(config))
    assert len(history) >= 3 and get_graph(method).checkpointer is None  # the shared graph stays clean
    assert graph.config["metadata"]["method"] == method
