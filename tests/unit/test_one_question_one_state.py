"""One question, one run state: a second question on a checkpointed thread runs exactly as it
would on a new thread, whoever drives the graph (here: the caller's own checkpointer and
``thread_id``, not ``rag_graphs.run``).

Threads keep their state between runs and the shared reducers add, so without a reset the
second question inherited the first one's steps, documents, usage, hops (its budget spent
before it began), ``stop_kind`` and passage numbering.
"""

from __future__ import annotations

import typing
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from rag_graphs.catalog import METHODS
from rag_graphs.methods import get_graph
from rag_graphs.methods.self_rag import SelfRagState
from rag_graphs.nodes.fresh import fresh_values
from rag_graphs.state import RagState
from tests.adversarial import SCRIPT, obedient, recording_web_search
from tests.graphs import prepare
from tests.unit.test_faults import FAST

FIRST = "Where was Ilsa Brandt born?"
SECOND = "What does the Halden Foundation fund?"


def comparable(out: dict[str, Any]) -> dict[str, Any]:
    """A run's output with documents as ids (Documents compare by object, not content)."""
    return {
        **out,
        "documents": [d.id for d in out.get("documents", [])],
    }


@pytest.mark.parametrize("method", list(METHODS))
def test_a_second_question_on_a_thread_runs_as_on_a_new_thread(loaded, make_context, method):
    prepare(loaded, method)

    def ctx():  # a fresh script per run, so each run sees the same replies in the same order
        return make_context(
            chat_model=obedient(*SCRIPT),
            max_steps=3,
            max_hops=2,
            web_search=recording_web_search([]),
            search_cache=0,  # the cross-question cache would mark the repeated searches as hits
            max_concurrency=1,  # graded one by one: the script's replies come in one order
        )

    graph = get_graph(method, checkpointer=InMemorySaver(), retry_policy=FAST)
    thread = {"configurable": {"thread_id": "one-thread"}}
    first = graph.invoke({"question": FIRST}, thread, context=ctx())
    second = graph.invoke({"question": SECOND}, thread, context=ctx())
    alone = graph.invoke({"question": SECOND}, {"configurable": {"thread_id": "new"}}, context=ctx())

    assert first["steps"] and first["usage"].get("llm_calls"), first  # the first run did work
    assert comparable(second) == comparable(alone)
    held = graph.get_state(thread).values
    assert held["question"] == SECOND
    assert held.get("hops", 0) == graph.get_state({"configurable": {"thread_id": "new"}}).values.get(
        "hops", 0
    )
    assert not any(FIRST == s.get("query") for s in held.get("searches", []))


def test_an_async_driver_and_a_resumed_run_keep_their_own_state(loaded, make_context):
    """``ainvoke`` resets too; and input ``None`` (resume) continues the thread's run, not a new one."""
    import asyncio

    graph = get_graph("iterative", checkpointer=InMemorySaver(), retry_policy=FAST)
    thread = {"configurable": {"thread_id": "t"}}
    first = graph.invoke({"question": FIRST}, thread, context=make_context(chat_model=obedient(*SCRIPT)))
    second = asyncio.run(
        graph.ainvoke({"question": SECOND}, thread, context=make_context(chat_model=obedient(*SCRIPT)))
    )
    assert second["usage"] == first["usage"] and len(second["steps"]) == len(first["steps"])
    again = graph.invoke(None, thread, context=make_context(chat_model=obedient(*SCRIPT)))
    assert comparable(again) == comparable(second)  # a finished run resumed is itself, not a reset


def test_fresh_values_reset_reducers_and_read_as_unset():
    fresh = fresh_values(SelfRagState)
    assert "question" not in fresh
    assert fresh["steps"].value == [] and fresh["usage"].value == {} and fresh["hops"].value == 0
    assert fresh["stop_kind"] is None and fresh["evidence"] is None  # None: "not set" to their readers
    assert fresh["latest"] == [] and fresh["needs_retrieval"] is True
    assert set(fresh) == set(SelfRagState.__annotations__) - {"question"} | (
        set(RagState.__annotations__) - {"question"}
    )


def test_a_methods_own_fields_declare_their_unset_value_and_the_shared_list_holds_only_shared_fields():
    """The shared reset list names only ``RagState``'s fields: a method's own (HyDE's hypothesis,
    ReAct's tool calls, auto's kind) say theirs where they are declared (``Unset``)."""
    from rag_graphs.methods.auto import AutoState
    from rag_graphs.methods.hyde import HydeState
    from rag_graphs.methods.react import ReactState
    from rag_graphs.nodes.fresh import UNSET

    assert set(UNSET) <= set(typing.get_type_hints(RagState))
    assert fresh_values(HydeState)["hypothesis"] == ""
    assert fresh_values(AutoState)["kind"] == "" and fresh_values(AutoState)["method"] == ""
    first, second = fresh_values(ReactState)["tool_calls"], fresh_values(ReactState)["tool_calls"]
    assert first == [] and first is not second  # each graph's begin holds its own empty list


def test_a_method_graph_refuses_an_edge_from_start_that_would_skip_begin():
    """An edge from START would run beside ``begin``, on the thread's previous question's state."""
    from langgraph.graph import START

    from rag_graphs.nodes.builder import new_builder

    builder = new_builder()
    with pytest.raises(ValueError, match="starts at 'begin', not START"):
        builder.add_edge(START, "retrieve")
    with pytest.raises(ValueError, match="starts at 'begin', not START"):
        builder.add_conditional_edges(START, lambda state: "retrieve")
