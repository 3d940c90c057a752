"""Human in the loop on the LangGraph server: a client turns on an interrupt in its run's context
(``{"interrupts": ["plan"]}``, a setting a client may send to a served graph), the run stops at
it on its thread, and ``runs.wait(..., command={"resume": ...})`` finishes it, as a LangGraph
user resumes any interrupt through ``langgraph-sdk``.

The session's ``langgraph dev`` on loopback over the demo corpus (``conftest.demo_server``, shared
with ``test_langgraph_api.py``), answering with the scripted chat
(``tests/server/langgraph_server.py``); the store comes from the server's environment.
"""

from __future__ import annotations

import json

import pytest
from langgraph_sdk import get_sync_client

from tests.server.langgraph_server import REPLY

# one worker sets up this file's server or store (xdist_group: tests/conftest.py)
pytestmark = [pytest.mark.server, pytest.mark.xdist_group("demo_server")]

QUESTION = "Where was the founder of the Velmora Institute born?"
CONTEXT = {"interrupts": ["plan"], "k": 2, "max_answer_tokens": 24}
"""Sent with every run of a thread: a resumed run must ask what the stopped one asked."""
EDITED = ["Who founded the Velmora Institute?", "Where was #1 born?"]


@pytest.fixture(scope="module")
def server(demo_server: str) -> str:
    """The session's ``langgraph dev`` over the demo corpus (``conftest.demo_server``); its URL."""
    return demo_server


def _waiting_on(client, thread_id: str) -> list[dict]:
    """The payloads the thread's run waits on (the server's thread state), checked as JSON."""
    state = client.threads.get_state(thread_id)
    payloads = [i["value"] for i in state["interrupts"]]
    assert json.loads(json.dumps(payloads)) == payloads
    return payloads


def test_a_planned_run_waits_for_its_plan_and_a_resume_command_finishes_it(server):
    client = get_sync_client(url=server)
    thread = client.threads.create()["thread_id"]
    client.runs.wait(thread, "planned", input={"question": QUESTION}, context=CONTEXT)
    assert client.threads.get(thread)["status"] == "interrupted"
    (asked,) = _waiting_on(client, thread)
    assert asked["kind"] == "plan" and asked["question"] == QUESTION
    assert isinstance(asked["sub_questions"], list) and "approve" in asked["how_to_resume"]
    out = client.runs.wait(thread, "planned", command={"resume": EDITED}, context=CONTEXT)
    assert out["answer"] == REPLY and client.threads.get(thread)["status"] == "idle"
    walked = [s["query"] for s in out["steps"] if s["node"] == "next_subquestion"]
    assert walked[0] == EDITED[0] and len(walked) == 2  # the edited plan, #1 filled with an answer
    assert any(
        s["text"].startswith("the plan was edited: ") for s in out["steps"] if s["node"] == "approve_plan"
    )


def test_a_bad_resume_value_is_asked_again_not_a_failed_run(server):
    client = get_sync_client(url=server)
    thread = client.threads.create()["thread_id"]
    client.runs.wait(thread, "decomposition", input={"question": QUESTION}, context=CONTEXT)
    client.runs.wait(thread, "decomposition", command={"resume": ["", "  "]}, context=CONTEXT)
    (again,) = _waiting_on(client, thread)
    assert again["kind"] == "plan" and again["error"].startswith("sub-question 1: the question is empty")
    out = client.runs.wait(thread, "decomposition", command={"resume": "approve"}, context=CONTEXT)
    assert out["answer"] == REPLY and not out.get("error")
