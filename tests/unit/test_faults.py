"""Model faults: transient errors retried with backoff, permanent ones end the run with the
chain so far, malformed replies fall back in every method (scripted models that misbehave)."""

from __future__ import annotations

import itertools
import time

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.types import RetryPolicy

from rag_graphs.catalog import METHODS
from rag_graphs.ingestion.raptor import build_tree
from rag_graphs.llm.faults import is_transient
from rag_graphs.methods import get_graph
from rag_graphs.nodes.failures import RETRY, RunFailed, retryable
from rag_graphs.search.retrieval import index_for
from tests.conftest import FakeToolChat
from tests.graphs import prepare

QUESTION = "Where was Ilsa Brandt born?"
CONTRACT = {"answer", "citations", "documents", "steps", "usage"}
FAST = RetryPolicy(initial_interval=0.01, max_interval=0.05, max_attempts=3, retry_on=retryable)


class StatusError(Exception):
    """An SDK-style HTTP error (``status_code`` like openai's and anthropic's errors)."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code


class RateLimitError(Exception):
    """Named like the provider SDKs' rate-limit error, with no status attribute."""


class Scripted(BaseChatModel):
    """Plays ``script`` in order: an exception item is raised, any other item is the reply."""

    script: list
    calls: list = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        item = self.script[len(self.calls)] if len(self.calls) < len(self.script) else self.script[-1]
        self.calls.append((time.monotonic(), item))
        if isinstance(item, BaseException):
            raise item
        message = item if isinstance(item, AIMessage) else AIMessage(content=item)
        return ChatResult(generations=[ChatGeneration(message=message)])


def scripted(*items) -> Scripted:
    return Scripted(script=list(items), calls=[])


@pytest.mark.parametrize(
    "fault",
    [
        TimeoutError("read timed out"),
        StatusError(429, "rate limited"),
        RateLimitError("slow down"),
        StatusError(503, "overloaded"),
        ConnectionResetError("reset by peer"),
    ],
    ids=["timeout", "http-429", "sdk-rate-limit", "http-503", "connection-reset"],
)
def test_transient_model_errors_are_retried_then_the_run_succeeds(loaded, make_context, fault):
    model = scripted(fault, fault, "Korvik [1].")
    out = get_graph("naive", retry_policy=FAST).invoke(
        {"question": QUESTION}, context=make_context(chat_model=model)
    )
    assert out["answer"] == "Korvik [1]." and out["citations"] and "error" not in out
    assert len(model.calls) == 3  # two faults, one success
    assert out["usage"]["llm_calls"] == 1  # failed attempts produced no reply to count


def test_retries_back_off_and_are_bounded(loaded, make_context):
    policy = RetryPolicy(
        initial_interval=0.05, backoff_factor=2.0, max_attempts=3, jitter=False, retry_on=retryable
    )
    model = scripted(TimeoutError("read timed out"))  # times out forever
    with pytest.raises(RunFailed) as failed:
        get_graph("naive", retry_policy=policy).invoke(
            {"question": QUESTION}, context=make_context(chat_model=model)
        )
    assert len(model.calls) == 3  # max_attempts, then stop
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(model.calls)]
    assert gaps[0] >= 0.05 and gaps[1] >= 0.1  # waits grow by backoff_factor
    message = str(failed.value)
    assert (
        "generate failed after 3 attempts (transient error, retried)" in message and "TimeoutError" in message
    )


def test_a_permanent_error_ends_the_run_with_the_partial_chain(loaded, make_context):
    model = scripted(StatusError(401, "invalid api key"), "never reached")
    with pytest.raises(RunFailed) as failed:
        get_graph("fixed_step", retry_policy=FAST).invoke(
            {"question": QUESTION}, context=make_context(chat_model=model)
        )
    assert len(model.calls) == 1  # not retried
    result = failed.value.result
    assert set(result) >= CONTRACT | {"error"}
    assert result["error"] == str(failed.value)
    assert (
        "first_query failed (not retried: the error is not transient): StatusError: invalid api key"
        in (result["error"])
    )
    assert result["steps"][-1] == {"node": "first_query", "kind": "error", "text": result["error"]}
    assert isinstance(failed.value.__cause__, StatusError)


def test_a_failure_after_retrieval_keeps_what_was_gathered(loaded, make_context):
    model = scripted(ValueError("model returned an unparseable stream"))
    with pytest.raises(RunFailed) as failed:
        get_graph("naive", retry_policy=FAST).invoke(
            {"question": QUESTION}, context=make_context(chat_model=model)
        )
    result = failed.value.result
    assert [s["node"] for s in result["steps"]] == ["retrieve", "generate"]
    assert result["documents"] and result["usage"]["retrievals"] == 1 and result["answer"] == ""


def test_a_failure_inside_the_routed_method_names_it_once(loaded, make_context):
    model = scripted('{"kind": "multi_hop"}', StatusError(400, "context length exceeded"))
    with pytest.raises(RunFailed) as failed:
        get_graph("auto", retry_policy=FAST).invoke(
            {"question": QUESTION}, context=make_context(chat_model=model, router="llm")
        )
    result = failed.value.result
    assert str(failed.value).startswith("reason failed (not retried")  # ircot's node, not "dispatch"
    assert [s["node"] for s in result["steps"]][0] == "classify"  # the outer chain comes first
    assert [s["kind"] for s in result["steps"]].count("error") == 1


def test_a_transient_store_error_is_retried(loaded, make_context, monkeypatch):
    index = index_for(make_context())
    real, failures = type(index).search_many, [ConnectionError("milvus: connection refused")]

    def flaky(self, *args, **kwargs):
        if failures:
            raise failures.pop()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(type(index), "search_many", flaky)
    out = get_graph("naive", retry_policy=FAST).invoke(  # hybrid: the batch search path flakes
        {"question": QUESTION}, context=make_context("Korvik [1].", search_mode="hybrid")
    )
    assert out["answer"] == "Korvik [1]." and out["documents"] and not failures


def test_ctrl_c_is_not_turned_into_an_error_result(loaded, make_context):
    with pytest.raises(KeyboardInterrupt):
        get_graph("naive", retry_policy=FAST).invoke(
            {"question": QUESTION}, context=make_context(chat_model=scripted(KeyboardInterrupt()))
        )


def test_the_default_policy_is_bounded_and_classifies_by_type_and_status():
    assert RETRY.max_attempts == 4 and RETRY.max_interval <= 30
    for transient in (
        TimeoutError(),
        ConnectionError(),
        StatusError(429, ""),
        StatusError(500, ""),
        StatusError(529, ""),
        RateLimitError(),
    ):
        assert is_transient(transient), transient
    for permanent in (
        StatusError(400, ""),
        StatusError(401, ""),
        StatusError(404, ""),
        ValueError(),
        KeyError("x"),
        RuntimeError("rate limit"),
    ):  # the message text does not count
        assert not is_transient(permanent), permanent


# Replies a weak or broken model really gives: empty, whitespace, control characters,
# broken JSON, the wrong schema, a runaway line, a call to a tool that does not exist.
GARBAGE = [
    "",
    "   \n\t ",
    "\x00\x01\x02",
    '{"relevance": "maybe", "kind": 42',
    '{"unexpected": ["schema"]}',
    "Final Answer:",
    "Action: delete_everything[/]",
    "lorem " * 400,
    AIMessage(content="", tool_calls=[{"name": "rm_rf", "args": {"path": "/"}, "id": "call_1"}]),
    AIMessage(content="", tool_calls=[{"name": "search", "args": {}, "id": "call_2"}]),
]


@pytest.fixture
def with_tree(loaded, make_context):
    """The demo store with a RAPTOR tree, so the raptor method can run too."""
    build_tree(loaded, scripted("A summary of the passages."), progress=False)
    prepare(loaded, "graphrag")  # graph search needs the entity graph, graphrag its reports
    return loaded


@pytest.mark.parametrize("method", list(METHODS))
def test_malformed_replies_never_crash_a_method(with_tree, make_context, method):
    model = FakeToolChat(
        messages=itertools.cycle([g if isinstance(g, AIMessage) else AIMessage(content=g) for g in GARBAGE])
    )
    out = get_graph(method, retry_policy=FAST).invoke(
        {"question": QUESTION}, context=make_context(chat_model=model, max_steps=4, max_hops=2)
    )
    assert set(out) >= CONTRACT and "error" not in out
    assert isinstance(out["answer"], str) and out["steps"]
    known = {d.id for d in out["documents"]}
    assert all(c["chunk_id"] in known or c["kind"] == "web" for c in out["citations"])


def test_a_tool_call_to_an_unknown_tool_runs_nothing_and_is_answered(loaded, make_context):
    call = AIMessage(content="", tool_calls=[{"name": "rm_rf", "args": {"path": "/"}, "id": "c1"}])
    model = FakeToolChat(messages=iter([call, AIMessage(content="Korvik.")]))
    out = get_graph("react").invoke(
        {"question": QUESTION}, context=make_context(chat_model=model, tool_calling="native")
    )
    observation = next(s for s in out["steps"] if s["node"] == "act")
    assert observation["text"] == "unknown tool 'rm_rf'; available: search, calculator"
    assert out["answer"] == "Korvik." and out["usage"].get("retrievals", 0) == 0


def test_a_failed_run_inside_a_node_is_retried_only_when_its_cause_was_transient():
    """``auto`` runs its routed method inside a node: the ``RunFailed`` that reaches the retry
    policy is retried as its cause would be (the model-call classification knows no runs)."""
    assert RETRY.retry_on is retryable
    assert retryable(RunFailed("generate failed", {}, transient=True))
    assert not retryable(RunFailed("generate failed", {}, transient=False))
    assert retryable(TimeoutError()) and not retryable(StatusError(401, ""))
