"""Every method through a real OpenAI-compatible server: ``RAG_GRAPHS_CHAT_MODEL=openai:smollm2``
with ``OPENAI_BASE_URL`` at llama-cpp-python's server on loopback (see ``conftest.py``).

What only a real server shows: which structured-output modes it refuses (HTTP 500 for
``json_schema``), whether its chat format emits tool calls, the token counts in its
responses, streamed chunks, and what a run does when the server dies under it.
Kept cheap for ``make test`` on 2 cores: one question per method, k=2, short answers.
"""

from __future__ import annotations

import dataclasses
import re
import time

import pytest
from pydantic import BaseModel

from rag_graphs.config.context import RagContext
from rag_graphs.entity_graph.build import build_graph
from rag_graphs.entity_graph.entities import load_extractor
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.ingestion.community_reports import build_reports
from rag_graphs.llm.models import capabilities, load_chat_model
from rag_graphs.llm.structured import invoke_structured
from rag_graphs.methods import get_graph
from rag_graphs.nodes.failures import RunFailed
from rag_graphs.run import Finished, StepEvent, stream
from rag_graphs.store import load_embeddings, open_index
from tests.contract import check_contract

# one worker sets up this file's server or store (xdist_group: tests/conftest.py)
pytestmark = [pytest.mark.server, pytest.mark.xdist_group("llama_server")]

SPEC = "openai:smollm2"
QUESTION = "In which town was the founder of the Velmora Institute born?"
ANSWER_TOKENS = 48


@pytest.fixture(scope="module")
def ctx(llama_server, tmp_path_factory, demo_corpus) -> RagContext:
    """The demo corpus (MiniLM, Milvus Lite, its entity graph, community reports written by the
    served model) and a context whose chat model comes from the environment, as a user's would.
    No RAPTOR tree: no method here reads one (``raptor`` keeps its contract in
    ``tests/e2e/test_embedded.py``), and summarising it through the server cost ~30 s."""
    uri = str(tmp_path_factory.mktemp("server") / "milvus.db")
    report = ingest(
        [demo_corpus],
        index=RagContext(store_uri=uri, collection="demo"),
        options=IngestOptions(progress=False),
    )
    assert not report.failed, report.summary()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAG_GRAPHS_CHAT_MODEL", SPEC)
        ctx = RagContext(
            store_uri=uri,
            collection="demo",
            k=2,
            max_answer_tokens=ANSWER_TOKENS,
            max_hops=2,
            max_steps=4,
            num_queries=2,
            iterdrag_iterations=2,
        )
    assert ctx.chat_model == SPEC
    model = load_chat_model(SPEC, max_tokens=ANSWER_TOKENS)
    assert type(model).__name__ == "ChatOpenAI"
    assert str(model.root_client.base_url).rstrip("/") == llama_server.base_url  # from OPENAI_BASE_URL
    index = open_index(uri, "demo", load_embeddings("embedded"))
    build_graph(index, load_extractor("spacy"), progress=False)  # hipporag refuses a collection without one
    # graphrag: community reports, on communities of two passages or more (2 calls, not 4)
    build_reports(index, model, ask=invoke_structured, min_chunks=2, progress=False)
    return ctx


THROUGH_THE_SERVER = ("naive", "iterative", "ircot", "self_rag", "decomposition", "hyde", "graphrag", "auto")
"""One method per way a method talks to the model, each through the server: a plain answer (naive),
a loop of search decisions (iterative), reasoning steps (ircot), graded structured decisions
(self_rag), a structured list of sub-questions (decomposition), a written passage to search with
(hyde), community reports read back (graphrag), a routing decision and a delegated run (auto);
ReAct's tool calls have their own test below. Every method keeps the contract on the embedded
model in process (``tests/e2e/test_embedded.py``) and under scripted models (``test_multihop``):
what this file adds is the server's side (its structured-output modes, its usage counts), which
these cover without paying for all nineteen on 2 cores."""


@pytest.mark.parametrize("method", THROUGH_THE_SERVER)
def test_methods_answer_through_the_server_with_usage_from_its_responses(ctx, method):
    out = get_graph(method).invoke({"question": QUESTION}, context=ctx)
    check_contract(out, method=method, ctx=ctx)
    usage = out["usage"]
    # Token counts come from the server's ``usage`` field, one call at a time.
    assert usage["prompt_tokens"] >= 20 * usage["llm_calls"] and usage["completion_tokens"] > 0, usage


def test_the_server_keeps_the_reply_length_cap(llama_server):
    """langchain-openai sends the cap as ``max_completion_tokens``, which llama.cpp's server ignores:
    without ``max_tokens`` beside it a reply ran to the end of the context (the server fixture's
    RAPTOR summaries took over 15 minutes on one loaded core)."""
    model = load_chat_model(SPEC, max_tokens=8)
    reply = model.invoke("Count from 1 to 300, one number per line, and never stop early.")
    assert reply.usage_metadata is not None
    assert 0 < reply.usage_metadata["output_tokens"] <= 8, reply.usage_metadata


def test_structured_decisions_use_the_best_mode_the_server_accepts(llama_server):
    class Relevant(BaseModel):
        relevant: bool

    model = load_chat_model(SPEC, max_tokens=ANSWER_TOKENS)
    question = [("human", "Passage: Ilsa Brandt was born in Korvik.\nIs it relevant to: where was she born?")]
    first = invoke_structured(model, question, Relevant, Relevant(relevant=False))
    caps = capabilities(model)
    # llama-cpp-python's server refuses json_schema (HTTP 500, "Input should be 'text' or
    # 'json_object'"): refused once, not retried, then JSON mode under the schema's grammar.
    assert "json_object" in caps.rejected["json_schema"] and caps.structured_modes()[0] == "json_object"
    assert first.method == "native" and isinstance(first.value.relevant, bool)
    assert first.calls[-1].usage_metadata["input_tokens"] > 20
    again = invoke_structured(model, question, Relevant, Relevant(relevant=False))
    assert again.method == "native" and len(again.calls) == 1  # no second rejected request


def test_react_searches_through_native_tool_calls(ctx):
    out = get_graph("react").invoke({"question": "Where was Ilsa Brandt born?"}, context=ctx)
    model = load_chat_model(SPEC, max_tokens=ANSWER_TOKENS)
    assert capabilities(model).tools is True, out["steps"]
    searches = [s for s in out["steps"] if s["kind"] == "retrieve"]
    assert searches and out["usage"]["retrievals"] >= 1 and out["documents"]
    assert out["steps"][0]["text"].startswith("search("), out["steps"][0]  # a tool call, not prose
    assert out["answer"].strip()


def test_streaming_through_the_server(ctx):
    model = load_chat_model(SPEC, max_tokens=16)
    chunks = list(model.stream("Name one colour."))
    assert len(chunks) > 1 and "".join(str(c.content) for c in chunks).strip()  # token by token
    events = list(stream("naive", "Where was Ilsa Brandt born?", ctx))
    steps = [e for e in events if isinstance(e, StepEvent)]
    assert [s.step["node"] for s in steps] == ["retrieve", "generate"]
    assert isinstance(events[-1], Finished) and events[-1].result["usage"]["completion_tokens"] > 0


def test_a_server_killed_mid_run_is_retried_then_fails_clearly(ctx, doomed_server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", doomed_server.base_url)
    doomed = dataclasses.replace(ctx, chat_model=f"openai:{doomed_server.alias}")
    started = time.monotonic()
    with pytest.raises(RunFailed) as failed:
        for event in stream("naive", "Where was Ilsa Brandt born?", doomed):
            if isinstance(event, StepEvent) and event.step["kind"] == "retrieve":
                doomed_server.kill()  # between the search and the answer call
    elapsed = time.monotonic() - started
    message = str(failed.value)
    # the openai SDK's connection error (APIConnectionError, OpenAIConnectionError in newer SDKs)
    assert re.match(
        r"generate failed after 4 attempts \(transient error, retried\): \w*ConnectionError", message
    )
    assert failed.value.transient
    result = failed.value.result
    assert [s["kind"] for s in result["steps"]] == ["retrieve", "error"] and result["documents"]
    assert result["answer"] == "" and result["error"] == message
    # backoff of ~1 + 2 + 4 s between the four attempts (a floor: an upper bound would time the machine)
    assert elapsed >= 7


def test_judges_score_an_answer_through_the_server(ctx):
    """The judges' prompts and schemas through a real server (JSON mode under a grammar): each
    verdict is a score or None (unjudged), whatever the small model decides."""
    from rag_graphs.eval.judges import default_judges, judge_run

    out = get_graph("naive").invoke({"question": QUESTION}, context=ctx)
    judge = load_chat_model(SPEC, max_tokens=ANSWER_TOKENS)
    scores = judge_run(default_judges(judge), QUESTION, ["Korvik"], out)
    assert set(scores) == {"answer_correct", "grounded", "citation_precision"}, scores
    assert all(s is None or 0.0 <= s <= 1.0 for s in scores.values()), scores
