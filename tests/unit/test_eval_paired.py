"""Paired comparisons (``rag_graphs.eval.paired``): the tests agree with scipy, identical
configurations are called equal, the verdict reads the metric's direction and never contradicts
its own interval."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from scipy.stats import binomtest, bootstrap, permutation_test

from rag_graphs.eval import paired_comparison
from rag_graphs.eval.paired import (
    EXACT_FLIPS,
    against_best,
    compare_rows,
    comparison_table,
    paired_metric,
    sign_flip_p,
)


def _row(method: str, qid: int, **values: float | None) -> dict:
    base = {
        "method": method,
        "id": f"q{qid}",
        "em": None,
        "f1": None,
        "contains": None,
        "recall_at_2": None,
        "recall_at_5": None,
        "llm_calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "retrievals": 1,
        "seconds": 1.0,
    }
    return base | values


def _exact_mcnemar(b: int, c: int) -> float:
    """The exact McNemar p-value written out: twice the smaller binomial tail of the discordant pairs."""
    n, k = b + c, min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def test_a_binary_metric_uses_the_exact_mcnemar_test_on_the_discordant_pairs():
    rng = random.Random(1)
    a = [float(rng.random() < 0.7) for _ in range(80)]
    b = [float(rng.random() < 0.5) for _ in range(80)]
    m = paired_metric("em", a, b, "x", "y")
    wins = sum(1 for x, y in zip(a, b, strict=True) if x > y)
    losses = sum(1 for x, y in zip(a, b, strict=True) if x < y)
    assert (m.wins, m.losses, m.ties) == (wins, losses, 80 - wins - losses)
    assert m.test == "exact McNemar"
    assert m.p_value == pytest.approx(_exact_mcnemar(wins, losses), rel=1e-9)
    assert m.p_value == pytest.approx(binomtest(wins, wins + losses).pvalue, rel=1e-12)
    assert m.diff == pytest.approx(np.mean(a) - np.mean(b))


def _scipy_p(a, b, *, resamples: int = 100_000) -> float:
    """scipy's paired permutation test of the mean difference (exact when 2^n fits ``resamples``)."""
    result = permutation_test(
        (np.asarray(a, float), np.asarray(b, float)),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=resamples,
        random_state=0,
    )
    return float(result.pvalue)


@pytest.mark.parametrize("seed", range(4))
def test_the_permutation_test_is_scipys_exactly_on_few_pairs(seed):
    rng = np.random.default_rng(seed)
    n = EXACT_FLIPS - 4
    a = rng.uniform(0, 1, n)
    b = np.clip(a - 0.15 + rng.normal(0, 0.3, n), 0, 1)
    # both enumerate every sign pattern (2^12 < scipy's resamples): the same p to rounding
    assert sign_flip_p(list(a - b)) == pytest.approx(_scipy_p(a, b), rel=1e-9)


@pytest.mark.parametrize(("seed", "shift"), [(0, 0.0), (1, 0.05), (2, 0.12)])
def test_the_permutation_test_agrees_with_scipys_on_many_pairs(seed, shift):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 1, 60)
    b = np.clip(a - shift + rng.normal(0, 0.3, 60), 0, 1)
    # two random draws of sign patterns (20,000 here, 100,000 in scipy): a few thousandths apart
    assert sign_flip_p(list(a - b)) == pytest.approx(_scipy_p(a, b), abs=0.01)


def test_ties_do_not_change_the_permutation_test():
    diffs = [0.9, 0.4, -0.1, 0.7, -0.2, 0.5]
    assert sign_flip_p(diffs) == sign_flip_p(diffs + [0.0] * 40)
    assert sign_flip_p([0.0] * 10) == 1.0


def test_a_tie_heavy_graded_gain_is_called_as_its_interval_says():
    """HotpotQA's extract vs generate reader (BENCHMARKS, issue 51): F1 +23.5 points, interval
    [+13.6, +35.0], yet "no difference detected" from the sign test (p=0.061), because 40 of 60
    questions tie at F1 0 and the sign test weighs a win by 0.9 like a loss by 0.1."""
    a = [0.0] * 40 + [1.0, 0.9, 0.8, 1.0, 0.67, 1.0, 0.9, 1.0, 0.5, 1.0, 0.86, 1.0, 0.75, 1.0]
    b = [0.0] * 40 + [0.0] * 14
    a += [0.0, 0.1, 0.0, 0.2, 0.0, 0.0]  # the six questions generate wins, each by a little
    b += [0.2, 0.3, 0.1, 0.4, 0.1, 0.2]
    m = paired_metric("f1", a, b, "extract", "generate")
    assert (m.wins, m.losses, m.ties) == (14, 6, 40)
    assert binomtest(14, 20).pvalue > 0.05  # what the sign test said: no difference
    assert m.low > 0.05 and m.diff > 0.18  # the interval excludes 0 by far
    assert m.p_value == pytest.approx(_scipy_p(a, b), abs=0.002) and m.p_value < 0.001
    assert m.verdict == "extract better"


def test_the_verdict_never_contradicts_its_interval():
    rng = np.random.default_rng(11)
    for _ in range(200):
        n = int(rng.integers(4, 40))
        a = list(rng.choice([0.0, 0.5, 1.0], n))
        b = list(np.clip(np.array(a) + rng.choice([-0.5, 0.0, 0.0, 0.5], n), 0, 1))
        for metric in ("recall_at_5", "seconds"):
            m = paired_metric(metric, a, b, "x", "y")
            covers = m.low <= 0 <= m.high
            assert not (covers and m.verdict.endswith(" better")), m
            assert not (not covers and m.verdict.startswith("no difference")), m


def test_few_discordant_pairs_are_not_called_on_the_interval_alone():
    """4 wins and no loss in 56: the percentile bootstrap's interval excludes 0, the exact
    McNemar p is 0.125, so the verdict claims neither side."""
    a, b = [1.0] * 4 + [0.0] * 52, [0.0] * 56
    m = paired_metric("em", a, b, "x", "y")
    assert m.low > 0 and m.p_value == pytest.approx(0.125)
    assert m.verdict.startswith("unclear at n=56")


def test_the_paired_bootstrap_interval_agrees_with_scipys_percentile_bootstrap():
    rng = np.random.default_rng(7)
    a = rng.uniform(0, 1, 120)
    b = np.clip(a - 0.1 + rng.normal(0, 0.15, 120), 0, 1)
    m = paired_metric("f1", list(a), list(b))
    reference = bootstrap(
        (a, b),
        lambda x, y: np.mean(x - y),
        paired=True,
        method="percentile",
        n_resamples=20_000,
        random_state=0,
    ).confidence_interval
    assert m.test == "permutation"
    assert m.low == pytest.approx(reference.low, abs=0.01)
    assert m.high == pytest.approx(reference.high, abs=0.01)
    assert m.low < m.diff < m.high


def test_a_clear_gain_is_called_for_the_better_method_and_the_reverse_for_the_other():
    a = [1.0] * 30 + [0.0] * 10
    b = [0.0] * 20 + [1.0] * 10 + [0.0] * 10
    assert paired_metric("recall_at_5", a, b, "hipporag", "naive").verdict == "hipporag better"
    assert paired_metric("recall_at_5", b, a, "naive", "hipporag").verdict == "hipporag better"


def test_a_cost_is_better_when_lower():
    calls_a, calls_b = [0.0] * 20, [3.0] * 20
    m = paired_metric("llm_calls", calls_a, calls_b, "naive", "ircot")
    assert (m.wins, m.losses) == (20, 0) and m.verdict == "naive better"
    assert m.test == "permutation" and m.p_value == pytest.approx(_scipy_p(calls_a, calls_b), abs=2e-4)


def test_identical_configurations_are_called_equal():
    rng = random.Random(3)
    rows = []
    for q in range(60):
        values = {"recall_at_5": rng.choice([0.0, 0.5, 1.0]), "em": float(rng.random() < 0.4)}
        rows += [_row("naive", q, **values), _row("naive-again", q, **values)]
    c = paired_comparison(rows, "naive", "naive-again")
    for metric in ("recall_at_5", "em", "llm_calls", "seconds"):
        m = c.metrics[metric]
        assert m.p_value == 1.0 and m.diff == 0.0 and (m.low, m.high) == (0.0, 0.0)
        assert m.verdict == "no difference detected at n=60"


def test_a_small_difference_on_few_questions_is_not_called():
    m = paired_metric("em", [1.0, 1.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0])
    assert m.diff > 0 and m.p_value > 0.05 and m.verdict == "no difference detected at n=4"


def test_missing_scores_leave_their_metric_out_and_pairs_use_shared_questions():
    rows = [_row("a", q, recall_at_5=1.0) for q in range(5)] + [
        _row("b", q, recall_at_5=0.0) for q in range(3, 8)
    ]
    c = paired_comparison(rows, "a", "b")
    assert c.questions == 2 and "em" not in c.metrics and c.metrics["recall_at_5"].n == 2
    assert paired_comparison(rows, "a", "b", questions=["q3"]).questions == 1


def test_an_unknown_method_or_no_shared_question_is_a_clear_error():
    rows = [_row("a", 1), _row("b", 2)]
    with pytest.raises(ValueError, match="'c' has no rows in this run; it has a, b"):
        paired_comparison(rows, "a", "c")
    with pytest.raises(ValueError, match="share no answered question"):
        paired_comparison(rows, "a", "b")


def test_the_tables_escape_method_names_and_name_the_best_method():
    rows = []
    for q in range(30):
        rows += [_row("good|x", q, recall_at_5=1.0), _row("bad", q, recall_at_5=float(q % 3 == 0))]
    table = comparison_table(
        compare_rows(
            *({r["id"]: r for r in rows if r["method"] == m} for m in ("good|x", "bad")), "good|x", "bad"
        )
    )
    assert "good\\|x" in table and "| R@5 | 100.00 | 33.33 | +66.7" in table and "good\\|x better" in table
    best = against_best(rows, "recall_at_5")
    assert "method vs best (good\\|x)" in best and "| bad | 30 |" in best and "good\\|x better" in best
    assert json.dumps(best)  # plain text
