"""The quality-vs-cost frontier (``rag_graphs.eval.frontier``) and the report's method-choice
sections: dominated methods named, confirmed by paired tests or not, marked on the plot."""

from __future__ import annotations

import json

from rag_graphs.eval import summarize, write_report
from rag_graphs.eval.frontier import dominated, frontier_cost, frontier_lines


def _rows(method: str, scores: list[float], calls: float, seconds: float = 1.0) -> list[dict]:
    return [
        {
            "method": method,
            "id": f"q{i}",
            "em": None,
            "f1": None,
            "contains": None,
            "recall": score,
            "recall_at_2": score,
            "recall_at_5": score,
            "seconds": seconds,
            "model_seconds": 0.0,
            "search_seconds": seconds,
            "llm_calls": calls,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "retrievals": 1,
        }
        for i, score in enumerate(scores)
    ]


N = 40
CHEAP_GOOD = [1.0] * 30 + [0.0] * 10  # 75%, 0 calls
COSTLY_SAME = [1.0] * 30 + [0.0] * 10  # 75%, 3 calls: dominated by cheap_good, and the calls say so
COSTLY_BETTER = [1.0] * 38 + [0.0] * 2  # 95%, 4 calls: on the frontier
CHEAP_BAD = [1.0] * 29 + [0.0] * 11  # 72.5%, 0 calls: dominated, but one question is noise


def _run() -> list[dict]:
    return (
        _rows("cheap_good", CHEAP_GOOD, 0)
        + _rows("costly_same", COSTLY_SAME, 3)
        + _rows("costly_better", COSTLY_BETTER, 4)
        + _rows("cheap_bad", CHEAP_BAD, 0)
    )


def test_dominated_methods_are_named_with_the_cheapest_method_that_dominates_them():
    rows = _run()
    found = {d.method: d for d in dominated(summarize(rows), "recall_at_5", "llm_calls", rows)}
    assert set(found) == {"costly_same", "cheap_bad"}
    assert found["costly_same"].by == "cheap_good" and found["costly_same"].confirmed  # 40 of 40 cheaper
    assert found["cheap_bad"].by == "cheap_good" and not found["cheap_bad"].confirmed  # 1 question: noise


def test_the_frontier_lines_list_the_frontier_and_say_which_are_confirmed():
    rows = _run()
    text = "\n".join(frontier_lines(summarize(rows), "recall_at_5", "llm_calls", rows))
    assert "**Frontier** (R@5 against LLM calls per question" in text
    assert ": cheap_good, costly_better." in text
    assert "- costly_same: cheap_good has at least its R@5 at no more LLM calls (confirmed" in text
    assert (
        "- cheap_bad: cheap_good has at least its R@5 at no more LLM calls (by means; within noise)" in text
    )


def test_a_retrieval_only_run_draws_its_frontier_on_seconds():
    rows = _rows("a", CHEAP_GOOD, 0, seconds=1.0) + _rows("b", COSTLY_BETTER, 0, seconds=2.0)
    assert frontier_cost(summarize(rows)) == "seconds"
    assert dominated(summarize(rows), "recall_at_5", "seconds") == []


def test_the_report_has_the_frontier_and_the_paired_table_against_the_best(tmp_path):
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _run()))
    text = write_report(tmp_path).read_text()
    assert "Dominated on this set" in text and "- costly_same: cheap_good" in text
    assert "| method vs best (costly_better) | n |" in text
    paired = text.split("| method vs best")[1]
    line = next(li for li in paired.splitlines() if li.startswith("| cheap_good | 40 |"))
    assert "+20.0" in line and line.endswith("costly_better better |")  # 8 wins, 0 losses
    assert (tmp_path / "quality_vs_cost.png").read_bytes()[:4] == b"\x89PNG"


def test_one_method_has_no_frontier_or_paired_section(tmp_path):
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows("a", CHEAP_GOOD, 0)))
    text = write_report(tmp_path).read_text()
    assert "Frontier" not in text and "Paired against" not in text
