"""End to end on the embedded offline models: MiniLM embeddings, SmolLM2 via llama.cpp, Milvus Lite."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from langchain_core.caches import InMemoryCache
from pydantic import BaseModel
from typer.testing import CliRunner

from rag_graphs.catalog import METHODS
from rag_graphs.cli import app
from rag_graphs.config.context import RagContext
from rag_graphs.entity_graph.build import build_graph
from rag_graphs.entity_graph.entities import load_extractor
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.ingestion.community_reports import build_reports
from rag_graphs.ingestion.raptor import build_tree
from rag_graphs.llm.models import load_chat_model
from rag_graphs.llm.structured import invoke_structured
from rag_graphs.methods import get_graph
from rag_graphs.methods.naive import graph
from rag_graphs.nodes.reading import reader_of
from rag_graphs.prompts import load_prompt
from rag_graphs.store import load_embeddings, open_index
from tests.conftest import replies_from
from tests.contract import check_contract

# one worker sets up this file's server or store (xdist_group: tests/conftest.py)
pytestmark = [pytest.mark.embedded, pytest.mark.xdist_group("embedded_store")]

QUESTION = "Where was Ilsa Brandt born?"


@pytest.fixture(scope="module")
def store(tmp_path_factory, demo_corpus):
    uri = str(tmp_path_factory.mktemp("e2e") / "milvus.db")
    report = ingest(
        [demo_corpus],
        index=RagContext(store_uri=uri, collection="demo"),
        options=IngestOptions(progress=False),
    )
    assert not report.failed, report.summary()
    index = open_index(uri, "demo", load_embeddings("embedded"))
    tree = build_tree(index, load_chat_model("embedded"), progress=False)
    assert tree.nodes_per_level[0] == report.chunks and len(tree.nodes_per_level) >= 2
    build_graph(index, load_extractor("spacy"), progress=False)  # hipporag refuses a collection without one
    # min_chunks=2: the reports of the two communities of two passages or more (2 LLM calls, not 4)
    reports = build_reports(
        index, load_chat_model("embedded"), ask=invoke_structured, min_chunks=2, progress=False
    )
    assert reports.written >= 1, reports.summary()  # graphrag refuses a collection without reports
    return uri, report


@pytest.fixture(scope="module")
def ctx(store) -> RagContext:
    return RagContext(store_uri=store[0], collection="demo", k=3)


def test_ingest_then_reingest_is_idempotent(store, demo_corpus):
    uri, first = store
    assert first.added == first.chunks == first.total_chunks_in_store > 5
    again = ingest(
        [demo_corpus],
        index=RagContext(store_uri=uri, collection="demo"),
        options=IngestOptions(progress=False),
    )
    assert again.added == 0 and again.total_chunks_in_store == first.total_chunks_in_store


def test_real_embeddings_retrieve_the_passage_that_answers(ctx):
    index = open_index(ctx.store_uri, ctx.collection, load_embeddings("embedded"))
    for mode in ("dense", "hybrid"):
        top = index.search(QUESTION, k=2, mode=mode)
        assert any("born in Korvik" in d.page_content for d, _ in top), mode


def test_naive_answers_with_citations_that_resolve_to_stored_chunks(ctx):
    ctx = replace(ctx, reader="generate")  # SmolLM2 writes the answer (the default reads it out)
    out = graph.invoke({"question": QUESTION}, context=ctx)
    assert out["answer"].strip()
    assert out["citations"], out
    index = open_index(ctx.store_uri, ctx.collection, load_embeddings("embedded"))
    stored = {d.id: d for d in index.get([c["chunk_id"] for c in out["citations"]])}
    for cite in out["citations"]:
        assert cite["chunk_id"] in stored
        assert stored[cite["chunk_id"]].page_content.startswith(cite["quote"])
        assert Path(cite["source"]).is_file() and cite["cref"].startswith("#/")
    usage = out["usage"]
    assert usage["llm_calls"] == 1 and usage["retrievals"] == 1
    assert usage["prompt_tokens"] > 50 and usage["completion_tokens"] > 0


def test_embedded_model_is_deterministic_and_loaded_once(ctx):
    ctx = replace(ctx, reader="generate")
    first = graph.invoke({"question": QUESTION}, context=ctx)["answer"]
    second = graph.invoke({"question": QUESTION}, context=ctx)["answer"]
    assert first == second
    assert load_chat_model("embedded", max_tokens=ctx.max_answer_tokens) is load_chat_model(
        "embedded", max_tokens=ctx.max_answer_tokens
    )


class Verdict(BaseModel):
    relevant: bool
    reason: str


def test_grammar_constrained_output_always_matches_the_schema():
    model = load_chat_model("embedded")
    messages = load_prompt("answer_with_citations").format_messages(
        context="[1] Korvik is a fishing town.", question="Is passage 1 about a town?"
    )
    out = invoke_structured(model, messages, Verdict, default=Verdict(relevant=False, reason="default"))
    assert out.method == "grammar", out.error
    assert isinstance(out.value.relevant, bool) and out.value.reason != "default"


def test_cli_ask_prints_json_with_the_contract(ctx):
    result = CliRunner().invoke(
        app, ["ask", QUESTION, "--store", ctx.store_uri, "--collection", ctx.collection, "--json"]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout[result.stdout.index("{") :])
    assert payload["answer"] and payload["citations"] and payload["steps"][0]["node"] == "retrieve"


def test_cli_ingest_reports_a_missing_path_clearly(tmp_path):
    result = CliRunner().invoke(app, ["ingest", str(tmp_path / "missing"), "--store", str(tmp_path / "s.db")])
    assert result.exit_code == 1
    assert "missing" in result.output


def test_graph_runs_in_a_plain_python_process_with_settings_from_the_environment(tmp_path, demo_corpus):
    code = f"""
import json
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.config.context import RagContext
from rag_graphs.catalog import METHODS
from rag_graphs.methods import get_graph
from rag_graphs.methods.naive import graph
ctx = RagContext()
ingest({str(demo_corpus)!r}, index=ctx, options=IngestOptions(progress=False))
out = graph.invoke({{"question": {QUESTION!r}}})
print(json.dumps({{"store": ctx.store_uri, "n": len(out["citations"]), "answer": out["answer"]}}))
"""
    env = {
        **os.environ,
        "RAG_GRAPHS_STORE_URI": str(tmp_path / "env.db"),
        "RAG_GRAPHS_K": "2",
        "RAG_GRAPHS_ENV_DEFAULTS": "1",  # a context-less run opts in to environment defaults
    }
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Milvus Lite's plumbing messages (ingestion.quiet) stay off the user's screen.
    assert not re.search(r"NotImplementedError|GOAWAY|too_many_pings|\[WARNING\]\[", proc.stderr), proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["store"] == str(tmp_path / "env.db") and 1 <= result["n"] <= 2 and result["answer"]


def test_the_default_reader_extracts_a_cited_answer_from_the_passages(ctx):
    """On the embedded model the answer is read out of the passages (``reader="auto"``): no model
    call, an answer or ``no_evidence``, each explicit citation quoting one sentence of its stored
    chunk, that sentence the answer's line marked with its ``[n]``."""
    assert reader_of(ctx) == "extract"
    multi_hop = "In which town was the founder of the Velmora Institute born?"
    out = graph.invoke({"question": multi_hop}, context=ctx)
    check_contract(out, method="naive", ctx=ctx)
    assert out["usage"].get("llm_calls", 0) == 0 and out["usage"]["retrievals"] == 1
    short = out["answer"].splitlines()[0]
    assert short.strip() and (out["outcome"] == "answered" or out["outcome"] == "no_evidence"), out
    explicit = [c for c in out["citations"] if c["explicit"]]
    assert explicit or out["outcome"] == "no_evidence"
    stored = {
        d.id: d.page_content
        for d in open_index(ctx.store_uri, ctx.collection, load_embeddings("embedded")).get(
            [c["chunk_id"] for c in explicit]
        )
    }
    for cite in explicit:
        text = " ".join(stored[cite["chunk_id"]].split())
        assert cite["quote"] in text and f"{cite['quote']} [{cite['marker']}]" in out["answer"].splitlines()
        assert len(cite["quote"]) < len(text) or text.count(".") <= 1  # a sentence, not the whole chunk


GENERATED = ("ircot", "self_rag", "react", "iterdrag", "auto")
"""Methods that also run here with SmolLM2 writing the answer: those with an answer node of their
own (Self-RAG's draft, ReAct's and IterDRAG's finals), IRCoT's notes and ``auto``'s delegation.
The others answer through ``make_generate`` as naive does (its generate tests above), and unit
tests hold every method to the contract under both readers with scripted models
(``test_multihop``, ``test_reader_wiring``): the suite's time goes where only the real model fails."""


@pytest.fixture(scope="module")
def replies() -> InMemoryCache:
    """SmolLM2's replies in the contract runs below, by prompt and model settings."""
    return InMemoryCache()


@pytest.fixture
def each_prompt_answered_once(replies: InMemoryCache) -> Iterator[None]:
    """A prompt the contract runs send again is answered from ``replies``: each method's
    ``generate`` run (after its ``extract`` run, in the parametrisation's order) sends the same
    calls up to its answer, and only the answer is new. A reply depends on its prompt and settings
    alone (``Llama.reset`` per call: ``tests/unit/test_llama_chat.py``,
    ``test_embedded_model_is_deterministic_and_loaded_once`` above, neither of which uses this
    cache), so the second run gets the words it would get from the model and pays only for the
    answer its reader writes (``auto``: nothing, the method it routes to ran before it). Measured
    with ``-n 0`` on these ten runs at load 4: 388 s of calls before, 198 s after (IterDRAG
    ``generate`` 122 -> 14 s)."""
    with replies_from(replies):
        yield


@pytest.mark.usefixtures("each_prompt_answered_once")
@pytest.mark.parametrize(
    ("method", "reader"),
    [(m, "extract") for m in METHODS if m != "naive"] + [(m, "generate") for m in GENERATED],
)
def test_every_method_keeps_the_contract_on_the_embedded_model(ctx, method, reader):
    """Whatever branch SmolLM2's words take on this CPU (see ``tests/contract.py``), with either
    reader answering."""
    multi_hop = "In which town was the founder of the Velmora Institute born?"
    ctx = replace(ctx, reader=reader)
    out = get_graph(method).invoke({"question": multi_hop}, context=ctx)
    check_contract(out, method=method, ctx=ctx)
    if method == "auto":  # the router says which kind it saw and which method it ran
        routed = re.match(r"(\w+) -> (\w+|answer directly)\b", out["steps"][0]["text"])
        assert routed and (routed[2] in METHODS or routed[2] == "answer directly"), out["steps"][0]
    if not out["documents"]:  # only a method that may judge retrieval unneeded answers without passages
        assert method in {"self_rag", "auto"} and out["usage"].get("retrievals", 0) == 0, out["steps"]
