"""The evaluator: metrics against hand-checked cases, dataset validation, runs, resume, report."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from typer.testing import CliRunner

from rag_graphs.cli import app
from rag_graphs.eval import (
    answer_contained,
    bootstrap_ci,
    common_questions,
    evaluate,
    exact_match,
    f1_score,
    load_dataset,
    normalize_answer,
    read_rows,
    summarize,
    supporting_recall,
    write_report,
)
from tests.conftest import write_jsonl

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
    return evaluate(
        tiny,
        context=ctx,
        run_dir=tmp_path / "run",
        eval_store=str(tmp_path / "eval.db"),
        progress=False,
        **kwargs,
    )


def test_a_run_writes_one_scored_row_per_method_and_question(tiny, eval_ctx, tmp_path):
    run = _evaluate(tiny, eval_ctx(k=2), tmp_path)
    rows = read_rows(run)
    assert [(r["method"], r["id"]) for r in rows] == [
        (m, q) for q in ("q0", "q1", "q2") for m in ("naive", "fixed_step")
    ]
    first = rows[0]  # naive on q0, answered "Korvik [1]." for gold "Korvik"
    assert (first["em"], first["contains"]) == (0.0, 1.0) and first["f1"] == pytest.approx(2 / 3)
    assert first["llm_calls"] == 1 and first["retrievals"] == 1 and first["error"] is None
    assert (
        0 < first["search_seconds"] and first["model_seconds"] + first["search_seconds"] <= first["seconds"]
    )
    # fixed_step: 2 sub-queries + 2 intermediate answers + 1 answer; the constant reply makes the
    # second query a repeat of the first, which is not searched again.
    assert [(r["llm_calls"], r["retrievals"]) for r in rows if r["method"] == "fixed_step"] == [(5, 1)] * 3
    config = json.loads((run / "config.json").read_text())
    assert config["question_ids"] == ["q0", "q1", "q2"] and config["setting"] == "open"


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
