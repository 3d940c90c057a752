"""Human in the loop (issue 39 item 6): opt-in interrupts by ``RagContext.interrupts``, resumed with
LangGraph's ``Command(resume=...)`` on an in-memory checkpointer.

A scripted chat model (it fails when its replies run out, so a node run twice shows) and a
retriever of the user's own that records every query it is asked (no store): what was searched,
and how often, is what is asserted.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from rag_graphs.config.context import RagContext
from rag_graphs.methods import get_graph
from rag_graphs.nodes.interrupts import MAX_ASKS, read_plan
from tests.conftest import fake_chat

QUESTION = "In which town was the founder of the Velmora Institute born?"
FACTS = {
    "velmora": "The Velmora Institute was founded by Ilsa Brandt in 1901.",
    "brandt": "Ilsa Brandt was born in Korvik, a harbour town.",
    "korvik": "Korvik lies on the northern coast.",
}
PLAN = "Who founded the Velmora Institute?\nWhere was #1 born?"
PLANNED = (PLAN, "Ilsa Brandt.", "Korvik.", "Korvik [1].")  # plan, two sub-answers, the answer


class Recording(BaseRetriever):
    """The user's own retriever: every query it is asked, in order; the same three facts for each."""

    searched: list[str] = []

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        self.searched.append(query)
        return [Document(id=n, page_content=t, metadata={"source": f"{n}.txt"}) for n, t in FACTS.items()]


def context(tmp_path: Path, *replies: Any, retriever: Recording, **settings: Any) -> RagContext:
    return RagContext(
        chat_model=fake_chat(*replies),
        embeddings=DeterministicFakeEmbedding(size=32),
        store_uri=str(tmp_path / "no-store"),
        retriever=retriever,
        **settings,
    )


class Thread:
    """A method graph on an in-memory checkpointer, one thread, one context."""

    def __init__(self, method: str, ctx: RagContext) -> None:
        self.graph = get_graph(method, checkpointer=InMemorySaver())
        self.ctx = ctx
        self.config = {"configurable": {"thread_id": "t"}}

    def ask(self, question: str = QUESTION) -> dict:
        return self.graph.invoke({"question": question}, self.config, context=self.ctx)

    def answer(self, value: Any) -> dict:
        return self.graph.invoke(Command(resume=value), self.config, context=self.ctx)


def asked(out: dict) -> dict:
    """The one payload a stopped run waits on; it must be JSON as it is."""
    (stop,) = out["__interrupt__"]
    assert json.loads(json.dumps(stop.value)) == stop.value
    return stop.value


def decisions(out: dict) -> list[str]:
    return [s["text"] for s in out["steps"] if s["node"] in ("approve_plan", "web_search", "act", "clarify")]


def test_without_interrupts_nothing_stops(tmp_path):
    out = Thread("planned", context(tmp_path, *PLANNED, retriever=Recording(), k=1)).ask()
    assert "__interrupt__" not in out and out["answer"] == "Korvik [1]."


def test_planned_shows_the_plan_before_any_search_and_approved_answers_as_without(tmp_path):
    plain = Recording()
    expected = get_graph("planned").invoke(
        {"question": QUESTION}, context=context(tmp_path, *PLANNED, retriever=plain, k=1)
    )
    waiting = Recording()
    thread = Thread("planned", context(tmp_path, *PLANNED, retriever=waiting, k=1, interrupts=["plan"]))
    payload = asked(thread.ask())
    assert payload["kind"] == "plan" and payload["question"] == QUESTION
    assert payload["sub_questions"] == PLAN.split("\n") and "approve" in payload["how_to_resume"]
    assert waiting.searched == []  # nothing searched before the plan is approved
    out = thread.answer(True)
    assert out["answer"] == expected["answer"] == "Korvik [1]."
    assert (
        waiting.searched
        == plain.searched
        == ["Who founded the Velmora Institute?", "Where was Ilsa Brandt born?"]
    )
    assert decisions(out) == ["the plan was approved: Who founded the Velmora Institute?; Where was #1 born?"]
    assert out["usage"]["llm_calls"] == expected["usage"]["llm_calls"] == 4  # the plan was written once


def test_planned_searches_the_edited_plan(tmp_path):
    searched = Recording()
    thread = Thread("planned", context(tmp_path, *PLANNED, retriever=searched, k=1, interrupts="plan"))
    asked(thread.ask())
    out = thread.answer(["Who ran the Velmora Institute?", "What coast is #1's town on?"])
    assert searched.searched == ["Who ran the Velmora Institute?", "What coast is Ilsa Brandt's town on?"]
    assert decisions(out)[0].startswith("the plan was edited: Who ran the Velmora Institute?")


def test_a_resume_sent_without_the_context_is_still_read(tmp_path):
    # A client answering with Command(resume=...) alone: the run began asking for the plan, so the
    # edit is what gets searched (it used to be dropped for the model's plan, silently).
    searched = Recording()
    ctx = context(tmp_path, *PLANNED, retriever=searched, k=1, interrupts=["plan"])
    thread = Thread("planned", ctx)
    asked(thread.ask())
    thread.ctx = dataclasses.replace(ctx, interrupts=frozenset())
    out = thread.answer(["Who ran the Velmora Institute?", "What coast is #1's town on?"])
    assert searched.searched == ["Who ran the Velmora Institute?", "What coast is Ilsa Brandt's town on?"]
    assert decisions(out)[0].startswith("the plan was edited: Who ran the Velmora Institute?")


def test_a_bad_edit_is_asked_again_with_the_error_and_never_crashes(tmp_path):
    searched = Recording()
    thread = Thread("planned", context(tmp_path, *PLANNED, retriever=searched, k=1, interrupts=["plan"]))
    asked(thread.ask())
    again = asked(thread.answer(["Who founded it?", "   "]))
    assert again["kind"] == "plan" and again["error"].startswith("sub-question 2: the question is empty")
    again = asked(thread.answer({"sub_questions": "not a list"}))
    assert "not an approval nor a list" in again["error"]
    out = thread.answer(42)  # the third unusable answer: the model's plan stands, and a step says so
    assert "__interrupt__" not in out and out["answer"] == "Korvik [1]."
    assert searched.searched == ["Who founded the Velmora Institute?", "Where was Ilsa Brandt born?"]
    assert decisions(out)[0].startswith(f"kept the model's plan after {MAX_ASKS} unusable answers")


@pytest.mark.parametrize(
    "value,expected",
    [
        ("Approve", (None, "")),
        (False, ([], "")),
        (["a?"] * 4, (None, "4 sub-questions; at most 3 (RagContext.num_queries)")),
        ([" a? ", "b?"], (["a?", "b?"], "")),
        ("x" * 9000, (None, "not an approval nor a list of sub-questions: " + repr("x" * 9000)[:200])),
    ],
)
def test_plan_answers_are_read_strictly(value, expected):
    assert read_plan(value, 3) == expected


def test_decomposition_fan_out_runs_each_edited_branch_once_after_resume(tmp_path):
    searched = Recording()
    subs = ["Who founded the Velmora Institute?", "Where was Ilsa Brandt born?", "Where is Korvik?"]
    # the decomposition, three branch answers, the answer: a branch run twice would find no reply
    replies = ("Who founded it?\nWhere?", "Ilsa Brandt.", "Korvik.", "The coast.", "Korvik [1].")
    thread = Thread(
        "decomposition", context(tmp_path, *replies, retriever=searched, k=1, interrupts=["plan"])
    )
    assert asked(thread.ask())["sub_questions"] == ["Who founded it?", "Where?"]
    assert searched.searched == []
    out = thread.answer(subs)
    assert sorted(searched.searched) == sorted(subs)  # each searched exactly once
    branches = [s["query"] for s in out["steps"] if s["node"] == "answer_parallel"]
    assert sorted(branches) == sorted(subs) and out["answer"] == "Korvik [1]."
    assert out["usage"]["llm_calls"] == 5


def test_decomposition_rejected_plan_searches_the_question_alone(tmp_path):
    searched = Recording()
    replies = ("Who founded it?\nWhere?", "unknown", "I do not know.")  # the question's branch, the answer
    thread = Thread(
        "decomposition", context(tmp_path, *replies, retriever=searched, k=1, interrupts=["plan"])
    )
    asked(thread.ask())
    out = thread.answer("reject")
    assert searched.searched == [QUESTION] and out["answer"] == "I do not know."
    assert decisions(out) == ["the plan was rejected: searching the question alone"]


def web_tool(calls: list[str]):
    @tool("web_search")
    def web_search(query: str) -> list[dict]:
        """Search the web."""
        calls.append(query)
        return [{"url": "https://example.org/brandt", "content": "Ilsa Brandt was born in Korvik."}]

    return web_search


CRAG = ('{"relevance": "incorrect"}', "Ilsa Brandt birthplace")  # grade (k=1), rewrite


@pytest.mark.parametrize("answer", [False, "decline", {"approve": False}])
def test_crag_declined_web_search_searches_the_corpus_instead_and_says_so(tmp_path, answer):
    web: list[str] = []
    searched = Recording()
    replies = (*CRAG, '{"relevance": "correct"}', "Korvik [1].")
    ctx = context(
        tmp_path, *replies, retriever=searched, k=1, web_search=web_tool(web), interrupts=["web_search"]
    )
    thread = Thread("crag", ctx)
    payload = asked(thread.ask())
    assert payload == {
        "kind": "web_search",
        "question": QUESTION,
        "queries": ["Ilsa Brandt birthplace"],
        "how_to_resume": payload["how_to_resume"],
    }
    out = thread.answer(answer)
    assert web == [] and searched.searched == [QUESTION, "Ilsa Brandt birthplace"]
    assert decisions(out) == [
        "the web search was declined: going on without the web (Ilsa Brandt birthplace)"
    ]
    assert out["answer"] == "Korvik [1]." and out["citations"][0]["source"] != "https://example.org/brandt"


def test_crag_approved_web_search_runs_once(tmp_path):
    web: list[str] = []
    ctx = context(
        tmp_path,
        *CRAG,
        "Korvik [1].",
        retriever=Recording(),
        k=1,
        web_search=web_tool(web),
        interrupts=["web_search"],
    )
    thread = Thread("crag", ctx)
    asked(thread.ask())
    out = thread.answer("approve")
    assert web == ["Ilsa Brandt birthplace"] and out["citations"][0]["source"] == "https://example.org/brandt"


def test_react_declined_web_search_is_not_called_nor_asked_again(tmp_path):
    web: list[str] = []
    replies = (
        "Thought: look it up.\nAction: web_search[Ilsa Brandt birthplace]",
        "Thought: try again.\nAction: web_search[Korvik]",
        "Thought: done.\nFinal Answer: Korvik.",
    )
    ctx = context(
        tmp_path,
        *replies,
        retriever=Recording(),
        k=1,
        tool_calling="text",
        web_search=web_tool(web),
        interrupts=["web_search"],
    )
    thread = Thread("react", ctx)
    assert asked(thread.ask())["queries"] == ["Ilsa Brandt birthplace"]
    out = thread.answer(False)  # the second web request is not asked: the decline holds for the run
    assert "__interrupt__" not in out and web == [] and out["answer"].startswith("Korvik")
    notes = [s["text"] for s in out["steps"] if s["node"] == "act"]
    assert notes[0] == "the web search was declined: going on without the web (Ilsa Brandt birthplace)"
    assert sum("declined" in n for n in notes) == 3  # the decision, and both observations


MULTI_HOP = '{"kind": "multi_hop"}'


def test_the_plan_interrupt_fires_inside_autos_subgraph_and_resumes_there(tmp_path):
    searched = Recording()
    # classify (llm router), then planned as auto's subgraph: classify and the plan run once each
    ctx = context(
        tmp_path,
        MULTI_HOP,
        *PLANNED,
        retriever=searched,
        k=1,
        router="llm",
        routes="multi_hop=planned",
        interrupts=["plan"],
    )
    thread = Thread("auto", ctx)
    payload = asked(thread.ask())
    assert payload["kind"] == "plan" and payload["sub_questions"] == PLAN.split("\n")
    state = thread.graph.get_state(thread.config, subgraphs=True)
    (task,) = state.tasks
    assert task.name == "planned" and task.state.next == ("approve_plan",)  # waiting inside the method
    out = thread.answer(["Who founded the Velmora Institute?", "Where was #1 born?"])
    assert out["answer"] == "Korvik [1]." and out["usage"]["llm_calls"] == 5
    assert searched.searched == ["Who founded the Velmora Institute?", "Where was Ilsa Brandt born?"]
    nodes = [s["node"] for s in out["steps"]]
    assert nodes[:3] == ["classify", "plan", "approve_plan"] and nodes.count("plan") == 1


def test_auto_asks_back_when_unsure_and_classifies_the_clarified_question(tmp_path):
    searched = Recording()
    # an unreadable kind (unsure), then the clarified question's kind, then naive's answer
    ctx = context(
        tmp_path,
        "no idea",
        '{"kind": "single_hop"}',
        "Korvik [1].",
        retriever=searched,
        k=1,
        router="llm",
        interrupts=["clarify"],
    )
    thread = Thread("auto", ctx)
    payload = asked(thread.ask("Brandt?"))
    assert payload["kind"] == "clarify" and payload["question"] == "Brandt?"
    assert payload["seen_kind"] == "single_hop" and "no kind" in payload["why"]
    out = thread.answer("Where was Ilsa Brandt born?")
    assert searched.searched == ["Where was Ilsa Brandt born?"] and out["answer"] == "Korvik [1]."
    assert "asked back; the question is now: Where was Ilsa Brandt born?" in decisions(out)


def test_auto_goes_on_with_the_question_as_asked(tmp_path):
    searched = Recording()
    ctx = context(
        tmp_path, "no idea", "Korvik [1].", retriever=searched, k=1, router="llm", interrupts=["clarify"]
    )
    thread = Thread("auto", ctx)
    asked(thread.ask("Brandt?"))
    out = thread.answer("go on")
    assert searched.searched == ["Brandt?"] and decisions(out) == ["asked back; the question stands as asked"]


def test_interrupts_setting_is_checked_and_read_from_the_environment(monkeypatch):
    assert RagContext().interrupts == frozenset()
    monkeypatch.setenv("RAG_GRAPHS_INTERRUPTS", "plan, web_search")
    assert RagContext().interrupts == {"plan", "web_search"}
    with pytest.raises(ValueError, match="RagContext.interrupts.*'plan', 'web_search' or 'clarify'"):
        RagContext(interrupts=["approve"])


def test_a_declined_web_search_on_an_async_run(tmp_path):
    """The web search node's body runs natively async (``ModelNode.acall``): its interrupt too."""
    import asyncio

    web: list[str] = []
    replies = (*CRAG, '{"relevance": "correct"}', "Korvik [1].")
    ctx = context(
        tmp_path, *replies, retriever=Recording(), k=1, web_search=web_tool(web), interrupts=["web_search"]
    )
    thread = Thread("crag", ctx)

    async def both() -> tuple[dict, dict]:
        first = await thread.graph.ainvoke({"question": QUESTION}, thread.config, context=ctx)
        return first, await thread.graph.ainvoke(Command(resume=False), thread.config, context=ctx)

    first, out = asyncio.run(both())
    assert asked(first)["kind"] == "web_search" and web == [] and out["answer"] == "Korvik [1]."


def test_a_close_vote_of_the_nearest_examples_is_unsure_and_auto_asks_back(tmp_path):
    from rag_graphs.text.question_kinds import classify_by_examples
    from tests.unit.test_question_kinds import EXAMPLES, TABLE, TableEmbeddings, write

    path = write(tmp_path, EXAMPLES)
    clear = "Where was Ilsa Brandt born?"
    embeddings = TableEmbeddings(TABLE | {"Brandt?": [0.0, 0.6, 0.8], clear: [0.0, 1.0, 0.0]})
    close, sure = (classify_by_examples(q, embeddings, path) for q in ("Brandt?", clear))
    assert close.kind == sure.kind == "single_hop"  # 1.28 against multi_hop's 0.80, of 2.08
    assert close.margin == pytest.approx((0.6 + 0.62 / 0.82**0.5 - 0.8) / (1.4 + 0.62 / 0.82**0.5), abs=1e-3)
    assert close.unsure and not sure.unsure
    searched = Recording()
    ctx = context(
        tmp_path, "Korvik [1].", retriever=searched, k=1, router_examples=str(path), interrupts=["clarify"]
    )
    ctx.embeddings = embeddings
    thread = Thread("auto", ctx)
    payload = asked(thread.ask("Brandt?"))
    assert payload["kind"] == "clarify" and "margin 0.23" in payload["why"]
    out = thread.answer(clear)
    assert searched.searched == [clear] and out["answer"] == "Korvik [1]."
    assert [s["node"] for s in out["steps"]][:3] == [
        "classify",
        "clarify",
        "clarify",
    ]  # asked; classified again


@pytest.mark.parametrize(
    "value,expected",
    [
        (True, (True, "")),
        (" No ", (False, "")),
        ({"approve": True}, (True, "")),
        ("maybe", (None, "neither approve nor decline: 'maybe'")),
        (None, (None, "neither approve nor decline: None")),
    ],
)
def test_web_answers_are_yes_or_no(value, expected):
    from rag_graphs.nodes.interrupts import read_yes_no

    assert read_yes_no(value) == expected


def test_a_clarification_is_a_question_or_go_on():
    from rag_graphs.nodes.interrupts import read_clarified

    assert read_clarified("go on", "Q?") == ("Q?", "")
    assert read_clarified(" Where? ", "Q?") == ("Where?", "")
    assert read_clarified(["a"], "Q?")[1].startswith("the question is empty or not text")


def test_a_served_client_may_turn_interrupts_on(monkeypatch):
    from rag_graphs.config.runtime import served_context

    monkeypatch.setenv("RAG_GRAPHS_SERVED", "1")
    assert served_context({"interrupts": ["plan", "web_search"]}).interrupts == {"plan", "web_search"}
    assert served_context({}).interrupts == frozenset()
