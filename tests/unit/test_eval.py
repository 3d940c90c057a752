"""The evaluator: metrics against hand-checked cases, dataset validation, runs, resume, report."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path
from statistics import mean

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from typer.testing import CliRunner

from rag_graphs.cli import app
from rag_graphs.eval import (
    EvalOptions,
    answer_contained,
    bootstrap_ci,
    common_questions,
    evaluate,
    exact_match,
    f1_score,
    load_dataset,
    markdown_table,
    normalize_answer,
    read_rows,
    recall_at_k,
    summarize,
    supporting_recall,
    write_report,
)
from rag_graphs.eval.judges import JUDGE_TOKENS
from rag_graphs.eval.langsmith import recall_at_k_evaluator
from rag_graphs.eval.rows import read_config
from tests.conftest import write_jsonl
from tests.unit.test_faults import StatusError, scripted

# -- metrics -------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        ("The Eiffel Tower!", "eiffel tower"),
        ("  an  Apple, a day ", "apple day"),
        ("Midland, Michigan", "midland michigan"),
    ],
)
def test_normalize_answer_follows_squad(text, expected):
    assert normalize_answer(text) == expected


def test_exact_match_uses_aliases_and_normalisation():
    assert exact_match("the Big Apple.", ["New York City", "Big Apple"]) == 1.0
    assert exact_match("New York", ["New York City"]) == 0.0


def test_f1_on_partial_overlap_is_hand_checked():
    # prediction tokens: eiffel tower in paris (4); gold: eiffel tower (2); overlap 2.
    # precision 2/4, recall 2/2 -> F1 = 2 * 0.5 * 1 / 1.5
    assert f1_score("The Eiffel Tower in Paris", ["Eiffel Tower"]) == pytest.approx(2 / 3)
    assert f1_score("Paris", ["Eiffel Tower", "Paris, France"]) == pytest.approx(2 / 3)  # best alias
    assert f1_score("no", ["yes"]) == 0.0 and f1_score("yes", ["yes"]) == 1.0
    assert f1_score("yes it is", ["yes"]) == 0.0  # yes/no answers only match exactly


def test_answer_contained_matches_whole_words_only():
    assert answer_contained("It was born in Korvik [1].", ["Korvik"]) == 1.0
    assert answer_contained("Korviksson", ["Korvik"]) == 0.0


def test_supporting_recall_is_by_id():
    assert supporting_recall(["a", "b", "c"], ["a", "d"]) == 0.5
    assert supporting_recall(["a", "d"], ["a", "d"]) == 1.0
    assert supporting_recall(["a"], []) is None
    assert supporting_recall(["a"], ["a", "a", "b"]) == 0.5  # gold is a set, as in R@k


def test_recall_at_k_reads_the_top_k_of_the_ranking():
    ranking = ["x", "y", "g1", "z", "g2"]
    assert recall_at_k(ranking, ["g1", "g2"], 2) == 0.0
    assert recall_at_k(ranking, ["g1", "g2"], 3) == 0.5
    assert recall_at_k(ranking, ["g1", "g2"], 5) == 1.0
    assert recall_at_k(ranking, ["g1", "nowhere"], 5) == 0.5
    assert recall_at_k(ranking, [], 5) is None


def test_recall_at_k_beyond_the_ranking_is_the_recall_of_all_of_it():
    assert recall_at_k(["a", "g"], ["g", "h"], 5) == 0.5 == supporting_recall(["a", "g"], ["g", "h"])
    assert recall_at_k([], ["g"], 2) == 0.0


def test_recall_at_k_counts_duplicates_once():
    # a repeated passage takes no place in the top k; a repeated gold id is one gold passage
    assert recall_at_k(["a", "a", "a", "g"], ["g"], 2) == 1.0
    assert recall_at_k(["g", "g"], ["g", "g"], 1) == 1.0
    assert recall_at_k(["a", "g"], ["g", "g", "h"], 2) == 0.5


def test_recall_at_k_positions_may_name_a_passage_several_ways():
    # the evaluator passes each passage as {chunk id, source file name}: either may be the gold
    ranking = [{"c1", "intro.md"}, {"c2", "intro.md"}, {"c3", "korvik.txt"}]
    assert recall_at_k(ranking, ["korvik.txt"], 2) == 0.0
    assert recall_at_k(ranking, ["korvik.txt", "c1"], 3) == 1.0


def test_recall_at_k_needs_a_positive_k():
    with pytest.raises(ValueError, match="k >= 1"):
        recall_at_k(["a"], ["a"], 0)


def test_langsmith_scores_r_at_k_of_the_retrieved_ranking():
    scores = recall_at_k_evaluator({"retrieved_ids": ["x", "y", "g"]}, {"supporting_ids": ["g"]})
    assert scores == [{"key": "recall_at_2", "score": 0.0}, {"key": "recall_at_5", "score": 1.0}]


def test_bootstrap_interval_brackets_the_mean_and_is_seeded():
    values = [0.0] * 50 + [1.0] * 50
    low, high = bootstrap_ci(values)
    assert low < 0.5 < high and high - low < 0.3
    assert bootstrap_ci(values) == (low, high)
    assert bootstrap_ci([0.7] * 10) == pytest.approx((0.7, 0.7))


# -- datasets ------------------------------------------------------------------


def test_load_dataset_reads_the_shared_layout(tiny):
    ds = load_dataset(tiny)
    assert [e.id for e in ds.examples] == ["q0", "q1", "q2"] and ds.corpus_path == tiny / "corpus.jsonl"
    assert ds.examples[0].golds == ["Korvik"] and ds.examples[0].passage_ids == ("p0a", "p0b", "p0c")
    assert [e.id for e in ds.select(limit=2)] == ["q0", "q1"]
    assert ds.select(sample=2, seed=1) == ds.select(sample=2, seed=1) and len(ds.select(sample=2)) == 2


@pytest.mark.parametrize(
    "line,message",
    [
        ('{"question": "q?"}', "dev.jsonl:2: field 'answer' must be a non-empty string"),
        ('{"question": "q?", "answer": "a", "answer_aliases": "b"}', "field 'answer_aliases' must be a list"),
        ("not json", "dev.jsonl:2: not valid JSON"),
        ('{"question": "q?", "answer": "a", "id": "x"}', "duplicate question id 'x'"),
    ],
)
def test_bad_rows_are_named_by_file_line_and_field(tmp_path, line, message):
    path = tmp_path / "dev.jsonl"
    path.write_text('{"id": "x", "question": "Q?", "answer": "A"}\n' + line + "\n")
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("[", r"\[")):
        load_dataset(path)


def test_missing_dataset_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="has no dev.jsonl"):
        load_dataset(tmp_path)
    with pytest.raises(FileNotFoundError, match="no dataset at"):
        load_dataset(tmp_path / "nope.jsonl")


# -- runs ----------------------------------------------------------------------


def _constant_model(reply: str = "Korvik [1].") -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=itertools.cycle([AIMessage(content=reply)]))


@pytest.fixture
def eval_ctx(make_context, tmp_path):
    def factory(model=None, **overrides):
        return make_context(chat_model=model or _constant_model(), **overrides)

    return factory


def _evaluate(tiny, ctx, tmp_path, **kwargs):
    kwargs.setdefault("methods", ["naive", "fixed_step"])
    methods = kwargs.pop("methods")
    where = {"run_dir": tmp_path / "run", "eval_store": str(tmp_path / "eval.db"), "progress": False}
    return evaluate(tiny, methods, context=ctx, options=EvalOptions(**where, **kwargs))


def test_a_run_writes_one_scored_row_per_method_and_question(tiny, eval_ctx, tmp_path):
    run = _evaluate(tiny, eval_ctx(k=2), tmp_path)
    rows = read_rows(run)
    # question by question, the method that goes first rotating (``timing.rotated``): a method run
    # second finds the question's vector and the store's pages warm, so no method is always second
    assert [(r["method"], r["id"]) for r in rows] == [
        ("naive", "q0"),
        ("fixed_step", "q0"),
        ("fixed_step", "q1"),
        ("naive", "q1"),
        ("fixed_step", "q2"),  # the second round of two questions runs the orders reversed
        ("naive", "q2"),
    ]
    first = rows[0]  # naive on q0, answered "Korvik [1]." for gold "Korvik"
    # EM and F1 score the short answer (citation marker and final period dropped); the row keeps both.
    assert first["prediction"] == "Korvik [1]." and first["short"] == "Korvik"
    assert (first["em"], first["f1"], first["contains"]) == (1.0, 1.0, 1.0)
    assert first["llm_calls"] == 1 and first["retrievals"] == 1 and first["error"] is None
    # How each run ended, without scanning its steps.
    assert (first["stop_reason"], first["outcome"]) == ("single pass", "answered")
    assert (
        0 < first["search_seconds"] and first["model_seconds"] + first["search_seconds"] <= first["seconds"]
    )
    # fixed_step: 2 sub-queries + 2 intermediate answers + 1 answer; the constant reply makes the
    # second query a repeat of the first, which is not searched again.
    assert [(r["llm_calls"], r["retrievals"]) for r in rows if r["method"] == "fixed_step"] == [(5, 1)] * 3
    config = json.loads((run / "config.json").read_text())
    assert config["question_ids"] == ["q0", "q1", "q2"] and config["setting"] == "open"


def test_an_evaluation_never_stops_for_a_person(tiny, eval_ctx, tmp_path):
    # RAG_GRAPHS_INTERRUPTS set for interactive use must not turn every row into "needs a thread_id".
    ctx = eval_ctx(k=2, interrupts=["plan"])
    assert ctx.interrupts == {"plan"}
    rows = read_rows(_evaluate(tiny, ctx, tmp_path, methods=["planned"], limit=1))
    assert len(rows) == 1 and rows[0]["error"] is None and rows[0]["prediction"] == "Korvik [1]."


def test_oracle_and_distractor_settings_search_only_the_questions_passages(tiny, eval_ctx, tmp_path):
    run = _evaluate(tiny, eval_ctx(k=4), tmp_path, methods=["naive"], setting="oracle")
    rows = read_rows(run)
    assert all(sorted(r["retrieved_ids"]) == sorted(r["supporting_ids"]) for r in rows)
    assert all(r["recall"] == 1.0 for r in rows)
    run = _evaluate(tiny, eval_ctx(k=4), tmp_path / "d", methods=["naive"], setting="distractor")
    for row in read_rows(run):
        assert set(row["retrieved_ids"]) == {f"p{row['id'][1]}{x}" for x in "abc"}


def test_an_interrupted_run_resumes_without_duplicate_rows(tiny, eval_ctx, tmp_path):
    replies = [AIMessage(content="Korvik [1].")] * 2

    def interrupted():
        yield from replies
        raise KeyboardInterrupt  # Ctrl-C during the third run

    with pytest.raises(KeyboardInterrupt):
        _evaluate(tiny, eval_ctx(GenericFakeChatModel(messages=interrupted())), tmp_path, methods=["naive"])
    rows_path = tmp_path / "run" / "rows.jsonl"
    assert len(read_rows(tmp_path / "run")) == 2
    with rows_path.open("a") as handle:  # and the process died in the middle of a write
        handle.write('{"method": "naive", "id": "q2", "pred')
    counting = _constant_model()
    _evaluate(tiny, eval_ctx(counting), tmp_path, methods=["naive"])
    rows = read_rows(tmp_path / "run")
    assert [r["id"] for r in rows] == ["q0", "q1", "q2"]
    assert rows_path.read_text().count("\n") == 3  # the partial line is gone, nothing doubled


def test_resuming_with_other_settings_is_refused(tiny, eval_ctx, tmp_path):
    _evaluate(tiny, eval_ctx(), tmp_path, methods=["naive"], limit=1)
    with pytest.raises(ValueError, match="holds a run with other question_ids"):
        _evaluate(tiny, eval_ctx(), tmp_path, methods=["naive"], limit=2)


def test_a_failing_run_becomes_an_error_row(tiny, eval_ctx, tmp_path):
    broken = GenericFakeChatModel(messages=iter([]))  # raises on the first call
    run = _evaluate(tiny, eval_ctx(broken), tmp_path, methods=["naive"], limit=1)
    (row,) = read_rows(run)
    assert row["error"] and row["f1"] == 0.0
    assert summarize([row])[0].errors == 1


def test_a_run_failing_mid_chain_is_scored_on_what_it_did_and_cost(tiny, eval_ctx, tmp_path):
    # fixed_step: first_query and the first intermediate answer work, next_query's call fails for good
    broken = scripted("Ilsa Brandt", "She was born in Korvik.", StatusError(401, "bad key sk-live-abcdef"))
    run = _evaluate(tiny, eval_ctx(broken, k=2), tmp_path, methods=["fixed_step"], limit=1)
    (row,) = read_rows(run)
    assert "next_query failed" in row["error"] and "bad key" in row["error"]
    assert (row["llm_calls"], row["retrievals"]) == (2, 1)  # not an empty result with 0 cost
    assert row["retrieved_ids"] and row["recall_at_5"] is not None and row["f1"] == 0.0


def test_report_has_the_table_and_plots_and_rerenders_from_rows(tiny, eval_ctx, tmp_path):
    run = _evaluate(tiny, eval_ctx(k=2), tmp_path)
    report = write_report(run)
    text = report.read_text()
    assert "| naive | 3 |" in text and "| fixed_step | 3 |" in text and "SP recall" in text
    for plot in ("quality_vs_cost.png", "recall_by_group.png"):
        assert (run / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        (run / plot).unlink()
    result = CliRunner().invoke(app, ["eval", "--report", str(run)])
    assert result.exit_code == 0, result.output
    assert "| naive | 3 |" in result.output and (run / "quality_vs_cost.png").is_file()


def test_methods_run_on_different_questions_are_also_compared_on_the_shared_ones(tiny, eval_ctx, tmp_path):
    run = _evaluate(tiny, eval_ctx(k=2), tmp_path)
    rows = read_rows(run)
    # Drop fixed_step's rows for two questions, as if it had been added to the run later.
    late = {r["id"] for r in rows if r["method"] == "fixed_step"}
    kept_id = sorted(late)[0]
    partial = [r for r in rows if r["method"] == "naive" or r["id"] == kept_id]
    assert {(r["method"], r["id"]) for r in common_questions(partial)} == {
        ("naive", kept_id),
        ("fixed_step", kept_id),
    }
    (run / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in partial))
    text = write_report(run).read_text()
    assert "| naive | 3 |" in text and "| fixed_step | 1 |" in text
    assert "on the 1 questions every method answered" in text and "| naive | 1 |" in text
    assert common_questions(rows) == rows


def test_summary_numbers_come_from_the_rows(tiny, eval_ctx, tmp_path):
    rows = read_rows(_evaluate(tiny, eval_ctx(k=2), tmp_path))
    naive = summarize(rows)[0]
    assert naive.method == "naive" and naive.n == 3
    # The scripted reply is always "Korvik [1].": right for q0 only.
    assert naive.quality["contains"][0] == pytest.approx(1 / 3) and naive.llm_calls == 1.0
    wall = sum(r["seconds"] for r in rows if r["method"] == "naive")
    busy = sum(r["model_seconds"] + r["search_seconds"] for r in rows if r["method"] == "naive")
    assert naive.overhead_share == pytest.approx((wall - busy) / wall)


def test_cli_eval_rejects_unknown_methods_and_missing_dataset(tiny):
    result = CliRunner().invoke(app, ["eval", "--dataset", str(tiny), "-m", "naive,nope"])
    assert result.exit_code == 1 and "unknown method(s) nope" in result.output
    result = CliRunner().invoke(app, ["eval"])
    assert result.exit_code == 1 and "--dataset is required" in result.output


def test_raptor_runs_get_their_tree_built_before_the_first_question(tiny, eval_ctx, tmp_path):
    run = _evaluate(tiny, eval_ctx(k=2), tmp_path, methods=["raptor"], limit=2)
    rows = read_rows(run)
    assert [r["error"] for r in rows] == [None, None] and all(r["retrievals"] == 1 for r in rows)


def test_a_run_resumes_from_another_folder_with_a_relative_dataset_path(
    tiny, eval_ctx, tmp_path, monkeypatch
):
    run = _evaluate(tiny, eval_ctx(k=2), tmp_path, methods=["naive"])
    rows = read_rows(run)
    monkeypatch.chdir(tiny.parent)
    relative = Path("..") / tiny.parent.name / tiny.name  # the same folder, spelled differently
    again = _evaluate(relative, eval_ctx(k=2), tmp_path, methods=["naive"])
    assert again == run and read_rows(run) == rows  # nothing asked twice
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(ValueError, match="holds a run with other dataset"):
        other_set = write_jsonl(other / "q.jsonl", [{"question": "Q?", "answer": "A"}])
        _evaluate(other_set, eval_ctx(k=2), tmp_path)


# -- ranked contexts: R@k, retrieval only --------------------------------------


class RankedEmbeddings(DeterministicFakeEmbedding):
    """A passage marked ``#n`` sits at cosine ``1 - n/10`` from every question, so dense search
    ranks passages by their mark (#1 first); unmarked texts (questions) point one way."""

    def _get_embedding(self) -> list[float]:  # unused: every text is embedded below
        raise AssertionError

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        mark = re.search(r"#(\d+)", text)
        cosine = 1.0 - int(mark.group(1)) / 10 if mark else 1.0
        return [cosine, math.sqrt(1 - cosine**2), *[0.0] * (self.size - 2)]


@pytest.fixture
def ranked_set(tmp_path: Path) -> Path:
    """One question; six passages the dense search ranks p1..p6; the gold passage is p3."""
    folder = tmp_path / "ranked"
    folder.mkdir()
    passages = [{"id": f"p{n}", "title": f"T{n}", "text": f"Passage #{n}."} for n in range(1, 7)]
    question = {"id": "q", "question": "Where?", "answer": "Korvik", "supporting_ids": ["p3"]}
    write_jsonl(folder / "dev.jsonl", [question])
    write_jsonl(folder / "corpus.jsonl", passages)
    return folder


@pytest.mark.parametrize("retrieval_only", [False, True], ids=["answered", "retrieval-only"])
def test_rows_carry_r_at_k_of_the_final_ranking(ranked_set, make_context, tmp_path, retrieval_only):
    ctx = make_context(
        chat_model=_constant_model(), embeddings=RankedEmbeddings(size=8), k=5, search_mode="dense"
    )
    run = _evaluate(ranked_set, ctx, tmp_path, methods=["naive"], retrieval_only=retrieval_only)
    (row,) = read_rows(run)
    assert row["retrieved_ids"] == ["p1", "p2", "p3", "p4", "p5"]  # the ranking, best first
    assert row["searches"] == [{"query": "Where?", "doc_ids": ["p1", "p2", "p3", "p4", "p5"]}]
    assert (row["recall_at_2"], row["recall_at_5"], row["recall"]) == (0.0, 1.0, 1.0)  # gold 3rd
    assert (row["f1"] is None) is retrieval_only


def test_retrieval_only_makes_no_answer_call_and_still_reports_r_at_k(tiny, eval_ctx, tmp_path):
    full_model, retrieval_model = scripted("Korvik [1]."), scripted("Korvik [1].")
    methods = ["naive", "fixed_step"]
    full = read_rows(_evaluate(tiny, eval_ctx(full_model, k=2), tmp_path / "full", methods=methods))
    run = _evaluate(tiny, eval_ctx(retrieval_model, k=2), tmp_path, methods=methods, retrieval_only=True)

    # the method run first rotates per question (timing.rotated): naive's rows first, then fixed_step's
    def by_method(rs: list[dict]) -> list[dict]:
        return sorted(rs, key=lambda r: (r["method"] != "naive", r["id"]))

    rows, full = by_method(read_rows(run)), by_method(full)
    assert len(retrieval_model.calls) < len(full_model.calls)
    # naive: no call at all; fixed_step: its two queries and two intermediate answers, not the answer
    assert [r["llm_calls"] for r in rows] == [0] * 3 + [4] * 3
    assert [r["llm_calls"] for r in full] == [1] * 3 + [5] * 3
    assert len(retrieval_model.calls) == 3 * 4 and len(full_model.calls) == 3 * 6
    for row, answered in zip(rows, full, strict=True):
        assert row["stopped_before"] == "generate" and row["prediction"] == "" and row["error"] is None
        assert (row["em"], row["f1"], row["contains"]) == (None, None, None)  # absent, not 0
        assert row["retrievals"] == answered["retrievals"] > 0
        for metric in ("recall", "recall_at_2", "recall_at_5"):
            assert row[metric] == answered[metric] is not None
    assert json.loads((run / "config.json").read_text())["retrieval_only"] is True
    naive = summarize(rows)[0]
    assert naive.quality["f1"][0] != naive.quality["f1"][0]  # nan: no answers to average
    assert naive.quality["recall_at_5"][0] == pytest.approx(mean(r["recall_at_5"] for r in rows[:3]))


def test_a_retrieval_only_report_shows_r_at_k_and_no_answer_columns(tiny, eval_ctx, tmp_path):
    run = _evaluate(tiny, eval_ctx(k=2), tmp_path, methods=["naive"], retrieval_only=True)
    text = write_report(run).read_text()
    header = next(line for line in text.splitlines() if line.startswith("| method"))
    assert "R@2" in header and "R@5" in header and "SP recall" in header and "LLM calls" in header
    assert "EM" not in header and "F1" not in header and "contains" not in header
    assert "Retrieval only" in text and "with k=2, a method that retrieves once" in text
    naive_line = next(line for line in text.splitlines() if line.startswith("| naive"))
    assert naive_line.split(" | ")[2:5] == [
        f"{100 * v[0]:.1f} [{100 * v[1]:.0f}-{100 * v[2]:.0f}]"
        for v in (summarize(read_rows(run))[0].quality[m] for m in ("recall", "recall_at_2", "recall_at_5"))
    ]
    for plot in ("quality_vs_cost.png", "recall_at_k.png", "recall_by_group.png"):
        assert (run / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_answered_report_has_r_at_k_beside_the_answer_columns(tiny, eval_ctx, tmp_path):
    run = _evaluate(tiny, eval_ctx(k=5), tmp_path, methods=["naive"])
    text = write_report(run).read_text()
    assert "| method | n | EM | F1 | contains | SP recall | R@2 | R@5 | LLM calls |" in text
    assert "with k=" not in text and (run / "recall_at_k.png").is_file()


def test_methods_without_answers_show_n_a_not_zero_beside_answered_ones(tiny, eval_ctx, tmp_path):
    answered = read_rows(_evaluate(tiny, eval_ctx(k=2), tmp_path / "a", methods=["naive"]))
    stopped = read_rows(_evaluate(tiny, eval_ctx(k=2), tmp_path, methods=["naive"], retrieval_only=True))
    table = markdown_table(summarize(answered + [r | {"method": "naive-retrieval"} for r in stopped]))
    line = next(line for line in table.splitlines() if line.startswith("| naive-retrieval"))
    assert line.split(" | ")[2:5] == ["n/a", "n/a", "n/a"]


def test_old_rows_without_r_at_k_still_report(tiny, eval_ctx, tmp_path):
    run = _evaluate(tiny, eval_ctx(k=2), tmp_path, methods=["naive"])
    old = [{k: v for k, v in r.items() if not k.startswith("recall_at_")} for r in read_rows(run)]
    (run / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old))
    text = write_report(run).read_text()
    naive_line = next(line for line in text.splitlines() if line.startswith("| naive"))
    assert naive_line.split(" | ")[6:8] == ["n/a", "n/a"] and not (run / "recall_at_k.png").exists()


def test_a_retrieval_only_run_is_not_resumed_with_answers(tiny, eval_ctx, tmp_path):
    _evaluate(tiny, eval_ctx(), tmp_path, methods=["naive"], limit=1, retrieval_only=True)
    with pytest.raises(ValueError, match="holds a run with other retrieval_only"):
        _evaluate(tiny, eval_ctx(), tmp_path, methods=["naive"], limit=1)


def test_cli_eval_passes_retrieval_only_and_k_and_a_resume_keeps_them(tiny, eval_ctx, tmp_path, monkeypatch):
    import rag_graphs.eval

    run = _evaluate(tiny, eval_ctx(k=5), tmp_path, methods=["naive"], retrieval_only=True)
    calls: list[tuple[Path, dict]] = []

    def fake_evaluate(dataset, methods, **kwargs):
        calls.append((dataset, {**kwargs, **vars(kwargs["options"])}))
        return run

    monkeypatch.setattr(rag_graphs.eval, "evaluate", fake_evaluate)
    args = ["eval", "--dataset", str(tiny), "-m", "naive", "--retrieval-only", "--k", "7"]
    result = CliRunner().invoke(app, [*args, "--store", str(tmp_path / "eval.db")])
    assert result.exit_code == 0, result.output
    assert "R@5" in result.output and "| EM |" not in result.output
    dataset, kwargs = calls[-1]
    assert dataset == tiny and kwargs["retrieval_only"] is True and kwargs["context"].k == 7
    result = CliRunner().invoke(app, ["eval", "--dataset", str(tiny), "-m", "naive"])
    assert result.exit_code == 0 and calls[-1][1]["retrieval_only"] is False
    result = CliRunner().invoke(app, ["eval", "--resume", str(run)])  # the run's mode and k stay
    assert result.exit_code == 0, result.output
    assert calls[-1][1]["retrieval_only"] is True and calls[-1][1]["context"].k == 5
    assert CliRunner().invoke(app, ["eval", "--dataset", str(tiny), "--k", "0"]).exit_code == 2


def test_a_row_keeps_how_the_run_ended_and_self_rag_confidence():
    from rag_graphs.eval.datasets import Example
    from rag_graphs.eval.runner import Timer, score_row

    example = Example(id="q", question="Where?", answer="Korvik")
    out = {"answer": "Unable to provide a reliable answer", "outcome": "unreliable", "confidence": "low"}
    row = score_row("self_rag", example, {**out, "stop_reason": "never grounded"}, 1.0, Timer())
    assert (row["outcome"], row["stop_reason"], row["confidence"]) == ("unreliable", "never grounded", "low")
    assert score_row("naive", example, {"answer": "Korvik"}, 1.0, Timer())["confidence"] is None


def test_judges_score_every_answered_row_and_the_report_gives_them_columns(tiny, eval_ctx, tmp_path):
    from rag_graphs.eval.judges import default_judges

    verdicts = itertools.cycle(['{"correct": true}', '{"grounded": false}', '{"supports": true}'])
    judge = GenericFakeChatModel(messages=map(lambda v: AIMessage(content=v), verdicts))

    def brevity(*, outputs: dict, **_: object) -> dict:
        return {"key": "brief", "score": len(outputs["answer"]) < 40}

    run = _evaluate(
        tiny, eval_ctx(k=2), tmp_path, methods=["naive"], evaluators=[*default_judges(judge), brevity]
    )
    rows = read_rows(run)
    # naive answers "Korvik [1]." to each question: one citation, so three judge calls per row
    assert [r["judged"] for r in rows] == [
        {"answer_correct": 1.0, "grounded": 0.0, "citation_precision": 1.0, "brief": 1.0}
    ] * 3
    assert read_config(run)["evaluators"] == ["answer_correct", "grounded", "citation_precision", "brevity"]
    text = write_report(run).read_text()
    assert "| answer_correct | grounded | citation_precision | brief |" in text
    assert (
        "| naive | 3 | " in text and "100.0 [100-100] | 0.0 [0-0] | 100.0 [100-100] | 100.0 [100-100]" in text
    )


def test_cli_eval_judge_loads_the_judge_before_any_run_and_refuses_retrieval_only(
    tiny, tmp_path, monkeypatch
):
    import rag_graphs.eval
    import rag_graphs.llm.models

    loaded: list[tuple[str, int]] = []
    judge = _constant_model('{"correct": true}')
    monkeypatch.setattr(
        rag_graphs.llm.models,
        "load_chat_model",
        lambda spec, max_tokens: loaded.append((spec, max_tokens)) or judge,
    )
    calls: list[dict] = []

    def fake_evaluate(dataset, methods, **kw):
        calls.append(vars(kw["options"]))
        return tmp_path

    monkeypatch.setattr(rag_graphs.eval, "evaluate", fake_evaluate)
    monkeypatch.setattr(rag_graphs.eval, "write_report", lambda run: tmp_path / "report.md")
    result = CliRunner().invoke(app, ["eval", "--dataset", str(tiny), "--judge", "openai:judge-model"])
    assert result.exit_code == 0, result.output
    assert loaded == [("openai:judge-model", JUDGE_TOKENS)]
    names = [e.__name__ for e in calls[-1]["evaluators"]]
    assert names == ["answer_correct", "grounded", "citation_precision"]
    refused = CliRunner().invoke(app, ["eval", "--dataset", str(tiny), "--judge", "x", "--retrieval-only"])
    assert refused.exit_code == 1 and "--judge scores answers" in refused.output
    assert len(calls) == 1  # refused before running


@pytest.mark.parametrize("count", [2, 3, 4])
def test_every_method_runs_before_every_other_half_the_time(count):
    """A method run after another on the same question finds it warm: over 2n questions each
    ordered pair is as often one way as the other (a plain rotation of three is not: a before b
    on two of three questions)."""
    from rag_graphs.eval.timing import rotated

    methods = [f"m{i}" for i in range(count)]
    orders = [rotated(methods, turn) for turn in range(2 * count)]
    assert all(sorted(order) == methods for order in orders)
    assert len({order[0] for order in orders[:count]}) == count  # each goes first once a round
    for a in methods:
        for b in methods:
            if a != b:
                assert sum(order.index(a) < order.index(b) for order in orders) == count
