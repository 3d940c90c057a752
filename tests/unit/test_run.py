"""``rag_graphs.run``: run, stream, resume on a checkpointed thread, and a failed run's partial result.

Scripted models on the demo corpus in a temporary Milvus Lite store; ``fixed_step`` makes five
model calls in a known order (first_query, intermediate, next_query, intermediate, generate), so
a failure at the third call tests resuming from a node in the middle of a chain.
"""

from __future__ import annotations

import asyncio

import pytest

from rag_graphs.nodes.failures import RunFailed
from rag_graphs.run import (
    Finished,
    Progress,
    Resumed,
    StepEvent,
    ThreadConflict,
    arun,
    astream,
    run,
    stream,
)
from tests.unit.test_faults import StatusError, scripted

QUESTION = "In which town was the founder of the Velmora Institute born?"
CONTRACT = {"answer", "citations", "documents", "steps", "usage"}
FIRST_HALF = ("Velmora Institute founder", "Ilsa Brandt founded it.")  # first_query, intermediate
SECOND_HALF = ("Ilsa Brandt birthplace", "She was born in Korvik.", "Korvik [1].")  # next_query ... generate
CHAIN = ["first_query", "retrieve", "intermediate", "next_query", "retrieve", "intermediate", "generate"]


def _fail_at_next_query():
    return scripted(*FIRST_HALF, StatusError(401, "bad key"))


def test_run_returns_the_answer_contract(loaded, make_context):
    out = run("naive", QUESTION, make_context("Korvik [1].", k=1))
    assert set(out) >= CONTRACT and out["answer"] == "Korvik [1]." and out["citations"]
    assert out["usage"]["retrievals"] == 1 and "error" not in out


def test_arun_returns_the_same_contract(loaded, make_context):
    out = asyncio.run(arun("naive", QUESTION, make_context("Korvik [1].", k=1)))
    assert set(out) >= CONTRACT and out["answer"] == "Korvik [1]." and out["citations"]


def test_stream_yields_progress_and_numbered_steps_then_the_result(loaded, make_context):
    events = list(stream("fixed_step", QUESTION, make_context(*FIRST_HALF, *SECOND_HALF, k=1)))
    assert isinstance(events[-1], Finished) and not events[-1].failed
    assert not any(isinstance(e, Resumed) for e in events)  # no thread, nothing to resume
    result = events[-1].result
    assert result["answer"] == "Korvik [1]."
    steps = [e for e in events if isinstance(e, StepEvent)]
    assert [s.number for s in steps] == list(range(1, len(result["steps"]) + 1))
    assert [s.step for s in steps] == result["steps"]  # each step streamed once, in order
    progress = [e for e in events if isinstance(e, Progress)]
    assert any(
        (p.node, p.event, p.details.get("query")) == ("retrieve", "start", "Velmora Institute founder")
        for p in progress
    )
    # a node's progress comes before the step it writes: the first retrieve event precedes step 2
    first_retrieve = next(i for i, e in enumerate(events) if isinstance(e, Progress) and e.node == "retrieve")
    assert first_retrieve < events.index(steps[1])


def test_astream_yields_the_same_kinds_of_events(loaded, make_context):
    async def collect():
        return [e async for e in astream("naive", QUESTION, make_context("Korvik [1].", k=1))]

    events = asyncio.run(collect())
    assert {type(e) for e in events} == {Progress, StepEvent, Finished} and isinstance(events[-1], Finished)
    assert [s.step["node"] for s in events if isinstance(s, StepEvent)] == ["retrieve", "generate"]


def test_a_failed_run_raises_with_its_partial_result_or_returns_it(loaded, make_context):
    # the three runs compare step for step: no search cache between them (its hits say so)
    with pytest.raises(RunFailed, match="next_query failed") as failed:
        run("fixed_step", QUESTION, make_context(chat_model=_fail_at_next_query(), k=1, search_cache=0))
    partial = failed.value.result
    assert [s["node"] for s in partial["steps"]] == [*CHAIN[:3], "next_query"]
    assert partial["steps"][-1]["kind"] == "error" and partial["answer"] == ""
    assert partial["usage"]["retrievals"] == 1 and partial["documents"]

    out = run(
        "fixed_step",
        QUESTION,
        make_context(chat_model=_fail_at_next_query(), k=1, search_cache=0),
        raise_on_failure=False,
    )
    assert out["steps"] == partial["steps"] and out["error"] == str(failed.value)
    (last,) = [
        e
        for e in stream(
            "fixed_step",
            QUESTION,
            make_context(chat_model=_fail_at_next_query(), k=1, search_cache=0),
            raise_on_failure=False,
        )
        if isinstance(e, Finished)
    ]
    assert last.failed and last.result["error"] == out["error"]


def test_a_thread_resumes_a_failed_run_at_the_failed_node(loaded, make_context, tmp_path):
    db = tmp_path / "deep" / "checkpoints.sqlite"  # missing folders are created
    broken = _fail_at_next_query()
    with pytest.raises(RunFailed):
        run("fixed_step", QUESTION, make_context(chat_model=broken, k=1), thread_id="t1", checkpoints=db)
    assert len(broken.calls) == 3 and db.is_file()

    fixed = scripted(*SECOND_HALF)
    events = list(
        stream("fixed_step", QUESTION, make_context(chat_model=fixed, k=1), thread_id="t1", checkpoints=db)
    )
    assert events[0] == Resumed("t1", ("next_query",)) and not events[0].finished
    assert len(fixed.calls) == 3  # next_query, intermediate, generate: nothing before the failure ran again
    streamed = [e.step["node"] for e in events if isinstance(e, StepEvent)]
    assert streamed == CHAIN[3:]  # only the steps of the resumed part are new
    result = events[-1].result
    assert [s["node"] for s in result["steps"] if s["kind"] != "error"] == CHAIN
    assert result["answer"] == "Korvik [1]." and result["usage"]["retrievals"] == 2


def test_a_finished_thread_returns_its_result_and_takes_another_question(loaded, make_context, tmp_path):
    db = tmp_path / "checkpoints.sqlite"
    first = run("naive", QUESTION, make_context("Korvik [1].", k=1), thread_id="done", checkpoints=db)
    idle = scripted(AssertionError("a finished thread must not call the model"))
    events = list(
        stream("naive", QUESTION, make_context(chat_model=idle, k=1), thread_id="done", checkpoints=db)
    )
    assert [type(e) for e in events] == [Resumed, Finished] and events[0].finished
    assert events[1].result["answer"] == first["answer"] and set(events[1].result) >= CONTRACT
    assert not idle.calls
    # Another question on the finished thread runs as on a new thread (``begin`` resets the state).
    other = "Who founded the Velmora Institute?"
    second = run(
        "naive",
        other,
        make_context("Ilsa Brandt [1].", k=1, search_cache=0),
        thread_id="done",
        checkpoints=db,
    )
    alone = run("naive", other, make_context("Ilsa Brandt [1].", k=1, search_cache=0))
    assert second["answer"] == alone["answer"] == "Ilsa Brandt [1]."
    assert second["steps"] == alone["steps"] and second["usage"] == alone["usage"]
    assert [d.id for d in second["documents"]] == [d.id for d in alone["documents"]]
    again = run("naive", other, make_context(chat_model=idle, k=1), thread_id="done", checkpoints=db)
    assert again["answer"] == second["answer"] and not idle.calls  # now the thread's finished run


def test_a_thread_with_an_unfinished_run_refuses_another_question(loaded, make_context, tmp_path):
    db = tmp_path / "checkpoints.sqlite"
    with pytest.raises(RunFailed):
        run(
            "fixed_step",
            QUESTION,
            make_context(chat_model=_fail_at_next_query(), k=1),
            thread_id="open",
            checkpoints=db,
        )
    idle = scripted(AssertionError("a refused run must not call the model"))
    with pytest.raises(ThreadConflict) as error:
        run(
            "fixed_step",
            "Another question?",
            make_context(chat_model=idle, k=1),
            thread_id="open",
            checkpoints=db,
        )
    message = str(error.value)
    assert "thread 'open' holds an unfinished run of another question" in message and "\n" not in message
    assert "next: next_query" in message and "--thread-id" in message and not idle.calls
    assert issubclass(ThreadConflict, ValueError)  # the CLI's ValueError clause reports it
    fixed = scripted(*SECOND_HALF)  # the unfinished run is still resumable
    out = run("fixed_step", QUESTION, make_context(chat_model=fixed, k=1), thread_id="open", checkpoints=db)
    assert out["answer"] == "Korvik [1]." and len(fixed.calls) == 3


def test_arun_resumes_a_thread_with_the_async_checkpointer(loaded, make_context, tmp_path):
    db = tmp_path / "checkpoints.sqlite"

    async def twice():
        with pytest.raises(RunFailed):
            await arun(
                "fixed_step",
                QUESTION,
                make_context(chat_model=_fail_at_next_query(), k=1),
                thread_id="a",
                checkpoints=db,
            )
        fixed = scripted(*SECOND_HALF)
        out = await arun(
            "fixed_step", QUESTION, make_context(chat_model=fixed, k=1), thread_id="a", checkpoints=db
        )
        return out, fixed

    out, fixed = asyncio.run(twice())
    assert out["answer"] == "Korvik [1]." and len(fixed.calls) == 3


def test_a_callers_config_is_used_and_keyed_by_the_thread(loaded, make_context, tmp_path):
    from langchain_core.callbacks import BaseCallbackHandler

    class Count(BaseCallbackHandler):
        starts = 0

        def on_chat_model_start(self, *args, **kwargs):
            Count.starts += 1

    config = {"callbacks": [Count()], "tags": ["mine"], "configurable": {"user": "u1"}}
    out = run(
        "naive",
        QUESTION,
        make_context("Korvik [1].", k=1),
        config=config,
        thread_id="c",
        checkpoints=tmp_path / "c.sqlite",
    )
    assert out["answer"] == "Korvik [1]." and Count.starts == 1
    assert config["configurable"] == {"user": "u1"}  # the caller's dict is not changed


# -- stopping before the answer ------------------------------------------------


def test_stop_before_answer_returns_the_context_without_an_answer_call(loaded, make_context):
    idle = scripted(AssertionError("the answer must not be written"))
    out = run("naive", QUESTION, make_context(chat_model=idle, k=2), stop_before_answer=True)
    assert not idle.calls and out["stopped_before"] == "generate"
    assert out["answer"] == "" and out["citations"] == [] and len(out["documents"]) == 2
    assert [s["node"] for s in out["steps"]] == ["retrieve"] and out["usage"]["retrievals"] == 1


def test_stop_before_answer_runs_a_multi_hop_chain_up_to_its_answer(loaded, make_context):
    model = scripted(*FIRST_HALF, *SECOND_HALF[:2], AssertionError("no answer call"))
    events = list(
        stream("fixed_step", QUESTION, make_context(chat_model=model, k=1), stop_before_answer=True)
    )
    assert len(model.calls) == 4  # first_query, intermediate, next_query, intermediate
    assert [e.step["node"] for e in events if isinstance(e, StepEvent)] == CHAIN[:-1]
    assert isinstance(events[-1], Finished) and not events[-1].failed
    result = events[-1].result
    assert result["stopped_before"] == "generate" and result["usage"]["llm_calls"] == 4
    assert result["usage"]["retrievals"] == 2 and result["documents"]


def test_arun_stops_before_the_answer_too(loaded, make_context):
    idle = scripted(AssertionError("the answer must not be written"))
    out = asyncio.run(arun("naive", QUESTION, make_context(chat_model=idle, k=1), stop_before_answer=True))
    assert not idle.calls and out["stopped_before"] == "generate" and out["documents"]


def test_stop_before_answer_also_stops_before_answer_directly(loaded, make_context):
    # Self-RAG judging that the question needs no retrieval goes to answer_directly: stopped there
    model = scripted('{"retrieve": false}', AssertionError("the answer must not be written"))
    out = run("self_rag", QUESTION, make_context(chat_model=model, k=1), stop_before_answer=True)
    assert out["stopped_before"] == "answer_directly" and len(model.calls) == 1
    assert out["documents"] == [] and out["answer"] == ""
    full = run("naive", QUESTION, make_context("Korvik [1].", k=1))
    assert "stopped_before" not in full  # a run that answers carries no stop mark


def test_a_thread_stopped_before_its_answer_answers_when_asked_again(loaded, make_context, tmp_path):
    db = tmp_path / "checkpoints.sqlite"
    idle = scripted(AssertionError("the answer must not be written"))
    ctx = make_context(chat_model=idle, k=1)
    first = run("naive", QUESTION, ctx, thread_id="s", checkpoints=db, stop_before_answer=True)
    again = run("naive", QUESTION, ctx, thread_id="s", checkpoints=db, stop_before_answer=True)
    assert not idle.calls and first["stopped_before"] == again["stopped_before"] == "generate"
    assert [d.id for d in again["documents"]] == [d.id for d in first["documents"]]
    answer = scripted("Korvik [1].")
    events = list(
        stream("naive", QUESTION, make_context(chat_model=answer, k=1), thread_id="s", checkpoints=db)
    )
    assert events[0] == Resumed("s", ("generate",)) and len(answer.calls) == 1
    assert [e.step["node"] for e in events if isinstance(e, StepEvent)] == [
        "generate"
    ]  # retrieval not redone
    assert events[-1].result["answer"] == "Korvik [1]." and "stopped_before" not in events[-1].result
