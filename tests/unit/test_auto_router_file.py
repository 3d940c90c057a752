"""``auto`` with a fitted router file (``RagContext.router_file``): the fitted method runs instead of
``routes``, the first step names the file and why, and a served client cannot point it elsewhere."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from rag_graphs.config.runtime import ContextRefused, get_context
from rag_graphs.nodes.failures import RunFailed
from rag_graphs.run import run
from tests.unit.test_run import QUESTION

ROUTED = {"routes": "single_hop=naive,multi_hop=fixed_step", "router": "llm", "k": 1, "search_cache": 0}


def _router_file(tmp_path, **default) -> str:
    raw = {
        "format": "rag-graphs-router/1",
        "metric": "em",
        "cost": "llm_calls",
        "margin": 0.02,
        "segments": [
            {
                "feature": "kind",
                "equals": "multi_hop",
                "method": "naive",
                "why": "cheapest within 2.0 EM points of the best, fixed_step, on 30 questions",
                "questions": 30,
            }
        ],
        "default": {"method": "fixed_step", "why": "best EM", "questions": 60} | default,
    }
    path = tmp_path / "router.json"
    path.write_text(json.dumps(raw))
    return str(path)


def test_auto_runs_the_method_the_router_file_fitted_and_says_why(loaded, make_context, tmp_path):
    ctx = make_context('{"kind": "multi_hop"}', "Korvik [1].", router_file=_router_file(tmp_path), **ROUTED)
    out = run("auto", QUESTION, ctx)
    assert [s["node"] for s in out["steps"]] == ["classify", "retrieve", "generate"]  # naive, not fixed_step
    decided = out["steps"][0]["text"]
    assert decided.startswith("multi_hop -> naive (router file router.json: kind multi_hop, ")
    assert "kind = multi_hop: cheapest within 2.0 EM points of the best, fixed_step" in decided
    assert str(tmp_path) not in decided  # the file's name, never the server's folders
    assert out["answer"] == "Korvik [1]."


def test_without_a_router_file_auto_keeps_its_routes(loaded, make_context):
    from tests.unit.test_run import FIRST_HALF, SECOND_HALF

    out = run("auto", QUESTION, make_context('{"kind": "multi_hop"}', *FIRST_HALF, *SECOND_HALF, **ROUTED))
    assert out["steps"][0]["text"] == "multi_hop -> fixed_step"


def test_a_broken_router_file_fails_the_run_naming_the_file(loaded, make_context, tmp_path):
    path = _router_file(tmp_path, method="no_such_method")
    with pytest.raises(RunFailed, match="router.json: default.method: 'no_such_method' is not a method auto"):
        run("auto", QUESTION, make_context('{"kind": "multi_hop"}', router_file=path, **ROUTED))


def test_a_served_client_may_not_set_the_router_file(monkeypatch, tmp_path):
    monkeypatch.setenv("RAG_GRAPHS_SERVED", "1")
    with pytest.raises(ContextRefused, match="RagContext.router_file"):
        get_context(SimpleNamespace(context={"router_file": _router_file(tmp_path)}))


def test_a_router_on_a_first_search_feature_searches_once_under_the_access_filter(
    loaded, make_context, tmp_path
):
    raw = json.loads(open(_router_file(tmp_path)).read())
    raw["segments"] = [{"feature": "top_score", "above": -2.0, "method": "naive", "why": "matches well"}]
    path = tmp_path / "router.json"
    path.write_text(json.dumps(raw))
    out = run(
        "auto",
        QUESTION,
        make_context('{"kind": "multi_hop"}', "Korvik [1].", router_file=str(path), **ROUTED),
    )
    decided = out["steps"][0]["text"]
    assert decided.startswith("multi_hop -> naive (router file router.json: ") and ", top score " in decided
    assert "top_score > -2: matches well" in decided
    # a tenant that sees no chunk: the feature's search sees none either (top score 0, agreement 0)
    hidden = run(
        "auto",
        QUESTION,
        make_context(
            '{"kind": "multi_hop"}', "Korvik [1].", router_file=str(path), tenant="nobody", **ROUTED
        ),
    )
    assert ", top score 0.00, agreement 0.00;" in hidden["steps"][0]["text"]


class _CountingEmbeddings(DeterministicFakeEmbedding):
    """A fake model that counts the texts it embeds."""

    texts: int = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts += len(texts)
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.texts += 1
        return super().embed_query(text)


def test_an_evaluation_warms_autos_router_before_its_clock_starts(make_context, tmp_path):
    """The example questions' vectors are made once per process; left to the first question they
    were timed as routing's cost (4.3 s on MuSiQue's first question, BENCHMARKS.md issue 46)."""
    from rag_graphs.eval.runner import warm_up
    from rag_graphs.text.question_kinds import classify_by_examples, examples_file

    embeddings = _CountingEmbeddings(size=8)
    ctx = make_context(embeddings=embeddings, router_file=_router_file(tmp_path))
    warm_up(ctx, ["naive"])
    cold = embeddings.texts
    warm_up(ctx, ["naive", "auto"])
    assert embeddings.texts - cold > 10  # the examples' vectors, made before any question is timed
    warm = embeddings.texts
    classify_by_examples("Who founded Korvik?", embeddings, examples_file(ctx.router_examples))
    assert embeddings.texts - warm == 1  # the question alone
