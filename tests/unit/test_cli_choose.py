"""``rag-graphs eval --report RUN --compare A,B`` and ``--fit-router`` on a finished run's rows."""

from __future__ import annotations

import json
import time

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from typer.testing import CliRunner

from rag_graphs.cli import app
from rag_graphs.cli.choose import _timed
from rag_graphs.eval.halves import half_of
from rag_graphs.text import routing
from rag_graphs.text.routing import Features, load_router
from tests.unit.test_router_fit import _set


@pytest.fixture
def run(tmp_path):
    rows, _ = _set(120)
    folder = tmp_path / "run"
    folder.mkdir()
    for r in rows:
        r |= {"question": f"question {r['id']}", "model_seconds": 0.0, "search_seconds": 0.0}
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


@pytest.fixture
def kinds(monkeypatch):
    """The fake set's kinds (odd question numbers are multi-hop), no embedding model loaded."""

    def features(question, embeddings, examples):
        multi = int(question.rsplit("q", 1)[1]) % 2 == 1
        return Features("multi_hop" if multi else "single_hop", 8, 1)

    monkeypatch.setattr(routing, "question_features", features)
    monkeypatch.setattr(
        "rag_graphs.search.retrieval.embeddings_for", lambda ctx: DeterministicFakeEmbedding(size=4)
    )


def test_compare_prints_the_paired_table_on_one_half(run):
    result = CliRunner().invoke(
        app, ["eval", "--report", str(run), "--compare", "ircot,naive", "--half", "check"]
    )
    assert result.exit_code == 0, result.output
    check = sum(1 for i in range(120) if half_of(f"q{i}") == "check")
    assert f"{check} questions (check half), paired" in result.output
    assert "| EM |" in result.output and "ircot better" in result.output and "exact McNemar" in result.output


def test_compare_reads_b_from_another_run_and_calls_a_copy_equal(run, tmp_path):
    other = tmp_path / "again"
    other.mkdir()
    (other / "rows.jsonl").write_text((run / "rows.jsonl").read_text())
    result = CliRunner().invoke(app, ["eval", "--report", str(run), "--compare", f"naive,naive@{other}"])
    assert result.exit_code == 0, result.output
    assert "naive@again" in result.output and "ircot" not in result.output
    assert result.output.count("no difference detected at n=120") == 7  # EM F1 R@5 calls tokens retrievals s


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--compare", "naive"], "two methods as A,B"),
        (["--compare", "naive,nope"], "method 'nope' has no rows"),
        (["--fit-router", "r.json", "--metric", "bleu"], "--metric 'bleu'"),
    ],
)
def test_wrong_arguments_are_one_clear_line(run, kinds, args, message):
    result = CliRunner().invoke(app, ["eval", "--report", str(run), *args])
    assert result.exit_code != 0 and message in result.output


def test_compare_needs_a_report():
    result = CliRunner().invoke(app, ["eval", "--compare", "a,b"])
    assert result.exit_code != 0 and "give it with --report RUN_DIR" in result.output


def test_fit_router_on_the_tune_half_writes_a_file_auto_reads_and_scores_check(run, kinds, tmp_path):
    out = tmp_path / "router.json"
    result = CliRunner().invoke(
        app, ["eval", "--report", str(run), "--fit-router", str(out), "--half", "tune", "--margin", "5"]
    )
    assert result.exit_code == 0, result.output
    assert "(held out)" in result.output and "RAG_GRAPHS_ROUTER_FILE=" in result.output
    router = load_router(out)
    assert router.margin == 0.05 and router.choose(Features("single_hop", 8, 1))[0] == "naive"
    raw = json.loads(out.read_text())
    assert raw["fitted_on"]["run"].endswith("(tune half)") and raw["held_out"]["questions"] > 0


class _SlowEmbeddings(Embeddings):
    """0.05 s a query vector; with ``keeps``, each text's vector is made once (as the embedded
    model's ``store.local_embeddings`` keeps its queries')."""

    def __init__(self, keeps: bool) -> None:
        self.keeps, self.kept = keeps, {}

    def embed_query(self, text: str) -> list[float]:
        if not (self.keeps and text in self.kept):
            time.sleep(0.05)
            self.kept[text] = [float(len(text)), 1.0]
        return self.kept[text]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]


@pytest.mark.parametrize("keeps", [True, False])
def test_routing_is_charged_the_question_vector_only_when_the_method_cannot_reuse_it(keeps):
    """auto's classification embeds the question, and the method it runs embeds it again for its
    search: with a model that keeps query vectors the second is free, so the router's overhead
    (``Overhead``, measured by --fit-router) must not count it; with one that keeps none, it must."""
    from rag_graphs.store.reads import embed_queries

    embeddings = _SlowEmbeddings(keeps)
    questions = {f"q{i}": f"question number {i}" for i in range(3)}
    found, seconds = _timed(lambda text: embed_queries(embeddings, [text])[0][0], questions, embeddings)
    assert found == {q: float(len(text)) for q, text in questions.items()}
    assert (seconds < 0.04) if keeps else (seconds >= 0.05)
