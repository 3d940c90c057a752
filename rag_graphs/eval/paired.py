"""Paired comparisons of two methods on the same questions: is A really better than B?

Means with intervals side by side do not answer it: two methods' intervals can overlap while
one wins on nearly every question. Run on the same questions, the two methods' scores pair up,
and the per-question differences are what is tested:

- a **paired bootstrap interval** of the mean difference (A - B): the questions resampled with
  their pairs (``metrics.bootstrap_ci`` over the differences, seeded);
- a **test** of "no difference": for a 0/1 metric (EM, contains, a one-gold R@k) the **exact
  McNemar test** (``scipy.stats.binomtest`` on the discordant pairs, two-sided); for a graded one
  (F1, fractional R@k, calls, tokens, seconds) a **paired permutation (sign-flip) test of the
  mean difference** (``sign_flip_p``: exact up to ``EXACT_FLIPS`` non-zero differences, else
  ``RESAMPLES`` seeded random flips). The sign test this replaced counted only who wins a question:
  on HotpotQA, F1 +23.5 points [+13.6, +35.0] with 40 of 60 questions tied at 0 got p=0.061,
  because a win by 0.9 and a loss by 0.1 weighed the same. The permutation test weighs the sizes
  and tests the same statistic the interval is about (the mean difference);
- a **verdict** that never contradicts its own interval. "A better" / "B better" (by the
  direction better for the metric: higher quality, lower cost) needs both the test at p <
  ``ALPHA`` and the interval excluding 0 on that side; "no difference detected at n=..." needs
  both the test at p >= ``ALPHA`` and the interval covering 0; when they disagree the verdict is
  "unclear at n=..." and claims neither. Both are kept, rather than one deciding, because each
  errs where the other does not: the percentile bootstrap is too narrow on few discordant pairs
  (4 wins, 0 losses in 56: its interval excludes 0 while the exact p is 0.125), and a test on a
  heavy-tailed cost (one slow question) can reject while the resampled mean still crosses 0. Two
  identical configurations tie on every question, so p = 1, the interval is [0, 0] and they are
  called equal.

Everything reads result rows (``rows.jsonl``), so it runs on a finished run without asking a
question again; ``rag-graphs eval --report RUN --compare A,B`` prints it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import mean

import numpy as np
from scipy.stats import binomtest

from rag_graphs.eval.markdown import cell
from rag_graphs.eval.metrics import RANKS, bootstrap_ci

ALPHA = 0.05
"""Significance level of the verdicts."""
EXACT_FLIPS = 16
"""Up to this many non-zero differences, the permutation test enumerates every sign pattern."""
RESAMPLES = 20_000
"""Random sign patterns above ``EXACT_FLIPS`` (seeded: a report is the same each time it is drawn);
the smallest p it can give is 2 / (RESAMPLES + 1), ~1e-4."""
UNCLEAR = "unclear"
"""How a verdict starts when the test and the interval disagree."""
QUALITY_METRICS = ("em", "f1", "contains", *(f"recall_at_{k}" for k in RANKS))
COST_METRICS = ("llm_calls", "tokens", "retrievals", "seconds")
PAIRED_METRICS = (*QUALITY_METRICS, *COST_METRICS)
"""What a comparison tests, in table order: quality (higher is better), then cost (lower is)."""
NAMES = {
    "em": "EM",
    "f1": "F1",
    "contains": "contains",
    **{f"recall_at_{k}": f"R@{k}" for k in RANKS},
    "llm_calls": "LLM calls",
    "tokens": "tokens",
    "retrievals": "retrievals",
    "seconds": "seconds",
}


def row_value(row: dict, metric: str) -> float | None:
    """``metric`` of a result row as a number (None where the row has none: no gold, retrieval
    only); ``tokens`` is prompt plus completion tokens."""
    if metric == "tokens":
        return float(row.get("prompt_tokens", 0) + row.get("completion_tokens", 0))
    value = row.get(metric)
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass(frozen=True)
class PairedMetric:
    """One metric of a paired comparison of methods ``a`` and ``b``."""

    metric: str
    n: int
    """Questions where both methods have the metric."""
    mean_a: float
    mean_b: float
    diff: float
    """Mean of A - B over the pairs (quality as a fraction, costs in their unit)."""
    low: float
    high: float
    """Paired bootstrap 95% interval of ``diff``."""
    wins: int
    """Questions where A is better (higher quality, lower cost)."""
    losses: int
    """Questions where B is better."""
    p_value: float
    test: str
    """``exact McNemar`` (0/1 scores) or ``permutation`` (sign-flip, graded scores and costs)."""
    verdict: str
    """``A better``, ``B better`` (A and B by name), ``no difference detected at n=...`` or
    ``unclear at n=...`` (the test and the interval disagree)."""

    @property
    def ties(self) -> int:
        return self.n - self.wins - self.losses


@dataclass(frozen=True)
class Comparison:
    """Methods ``a`` and ``b`` compared metric by metric on their shared questions."""

    a: str
    b: str
    questions: int
    metrics: dict[str, PairedMetric]


def sign_flip_p(diffs: Sequence[float], *, seed: int = 0) -> float:
    """Two-sided p-value of the paired permutation test that the mean of ``diffs`` is 0.

    Under "no difference" each pair's difference is as likely to have either sign, so the
    observed sum is set among the sums of its sign-flipped copies (zeros flip to themselves and
    are left out: ties add nothing, whatever their number). Exact over every pattern up to
    ``EXACT_FLIPS`` non-zero differences, else ``RESAMPLES`` seeded random ones counting the
    observed pattern, as ``scipy.stats.permutation_test(..., permutation_type="samples")`` does.
    """
    d = np.asarray([x for x in diffs if x != 0.0], dtype=float)
    if not d.size:
        return 1.0
    if d.size <= EXACT_FLIPS:
        bits = (np.arange(2**d.size)[:, None] >> np.arange(d.size)) & 1
        signs, adjust = 1.0 - 2.0 * bits, 0
    else:
        signs, adjust = np.random.default_rng(seed).choice([-1.0, 1.0], size=(RESAMPLES, d.size)), 1
    sums, observed = signs @ d, d.sum()
    slack = 1e-9 * np.abs(d).sum()  # the same sum in another order is the same sum
    greater = (np.count_nonzero(sums >= observed - slack) + adjust) / (len(sums) + adjust)
    less = (np.count_nonzero(sums <= observed + slack) + adjust) / (len(sums) + adjust)
    return float(min(1.0, 2 * min(greater, less)))


def verdict(
    diff: float, low: float, high: float, p_value: float, n: int, a: str, b: str, *, lower_better: bool
) -> str:
    """The one-line verdict, coherent with the interval (the module's rule): a side is called
    only when the test rejects and the interval excludes 0 on that side; "no difference" only
    when neither does."""
    rejects = p_value < ALPHA
    excludes = low > 0 or high < 0
    if rejects and excludes and diff != 0 and (low > 0) == (diff > 0):
        return f"{b if (diff > 0) == lower_better else a} better"
    if not rejects and not excludes:
        return f"no difference detected at n={n}"
    return f"{UNCLEAR} at n={n} (p={p_value:.2g}; the test and the interval disagree)"


def paired_metric(
    metric: str, a_values: Sequence[float], b_values: Sequence[float], a: str = "A", b: str = "B"
) -> PairedMetric:
    """Test one metric on paired values (``a_values[i]`` and ``b_values[i]`` from question i).

    Raises:
        ValueError: the two sequences differ in length, or are empty.
    """
    if len(a_values) != len(b_values) or not a_values:
        raise ValueError(f"{metric}: paired values need two non-empty lists of one length")
    lower_better = metric in COST_METRICS
    diffs = [x - y for x, y in zip(a_values, b_values, strict=True)]
    better = [-d if lower_better else d for d in diffs]  # > 0: A better on this question
    wins, losses = sum(1 for d in better if d > 0), sum(1 for d in better if d < 0)
    binary = not lower_better and all(v in (0.0, 1.0) for v in (*a_values, *b_values))
    if binary:  # only the discordant pairs count, and each by 1: the exact McNemar test
        p_value = binomtest(wins, wins + losses, 0.5).pvalue if wins + losses else 1.0
    else:
        p_value = sign_flip_p(diffs)
    n = len(diffs)
    low, high = bootstrap_ci(diffs)
    diff = mean(diffs)
    return PairedMetric(
        metric=metric,
        n=n,
        mean_a=mean(a_values),
        mean_b=mean(b_values),
        diff=diff,
        low=low,
        high=high,
        wins=wins,
        losses=losses,
        p_value=float(p_value),
        test="exact McNemar" if binary else "permutation",
        verdict=verdict(diff, low, high, float(p_value), n, a, b, lower_better=lower_better),
    )


def by_question(rows: Iterable[dict], method: str) -> dict[str, dict]:
    """``method``'s rows keyed by question id (as a string)."""
    return {str(r["id"]): r for r in rows if r["method"] == method}


def compare_rows(
    a_rows: dict[str, dict],
    b_rows: dict[str, dict],
    a: str,
    b: str,
    *,
    metrics: Sequence[str] = PAIRED_METRICS,
    questions: Iterable[str] | None = None,
) -> Comparison:
    """Compare two methods' rows (question id -> row) on the questions both answered (and in
    ``questions``, when given); a metric neither pair has (answers in a retrieval-only run) is
    left out.

    Raises:
        ValueError: the two share no question.
    """
    shared = [q for q in a_rows if q in b_rows]
    if questions is not None:
        keep = {str(q) for q in questions}
        shared = [q for q in shared if q in keep]
    if not shared:
        raise ValueError(f"{a} and {b} share no answered question: nothing to compare")
    out = {}
    for metric in metrics:
        pairs = [(row_value(a_rows[q], metric), row_value(b_rows[q], metric)) for q in shared]
        kept = [(x, y) for x, y in pairs if x is not None and y is not None]
        if kept:
            out[metric] = paired_metric(metric, [x for x, _ in kept], [y for _, y in kept], a, b)
    return Comparison(a=a, b=b, questions=len(shared), metrics=out)


def paired_comparison(
    rows: list[dict], a: str, b: str, *, questions: Iterable[str] | None = None
) -> Comparison:
    """Methods ``a`` and ``b`` of one run's rows compared on their shared questions.

    Raises:
        ValueError: a method has no rows (the message names the run's methods), or they share no question.
    """
    methods = list(dict.fromkeys(r["method"] for r in rows))
    for name in (a, b):
        if name not in methods:
            raise ValueError(f"method {name!r} has no rows in this run; it has {', '.join(methods)}")
    return compare_rows(by_question(rows, a), by_question(rows, b), a, b, questions=questions)


def _number(metric: str, value: float) -> str:
    """A difference in points for quality, in its unit for costs."""
    if metric in COST_METRICS:
        return f"{value:+.2f}" if metric != "tokens" else f"{value:+.0f}"
    return f"{100 * value:+.1f}"


def comparison_table(comparison: Comparison) -> str:
    """The comparison as Markdown: per metric, both means, A - B with its interval, wins / losses
    / ties of A, the test's p-value and the verdict (method names are data: escaped)."""
    a, b = cell(comparison.a), cell(comparison.b)
    lines = [
        f"| metric | {a} | {b} | {a} - {b} [95% CI] | {a} wins / losses / ties | test | p | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m in comparison.metrics.values():
        scale = 1 if m.metric in COST_METRICS else 100
        lines.append(
            f"| {NAMES.get(m.metric, m.metric)} | {scale * m.mean_a:.2f} | {scale * m.mean_b:.2f} | "
            f"{_number(m.metric, m.diff)} [{_number(m.metric, m.low)}, {_number(m.metric, m.high)}] | "
            f"{m.wins} / {m.losses} / {m.ties} | {m.test} | {m.p_value:.3g} | {cell(m.verdict)} |"
        )
    return "\n".join(lines)


def against_best(rows: list[dict], metric: str, costs: Sequence[str] = ("llm_calls", "seconds")) -> str:
    """Markdown: every method of ``rows`` against the one with the best mean ``metric`` on the
    questions every method answered, paired, on ``metric`` and ``costs`` ("" with one method)."""
    methods = list(dict.fromkeys(r["method"] for r in rows))
    scored = {
        m: [v for r in rows if r["method"] == m and (v := row_value(r, metric)) is not None] for m in methods
    }
    scored = {m: v for m, v in scored.items() if v}
    if len(scored) < 2:
        return ""
    best = max(scored, key=lambda m: mean(scored[m]))
    shown = [metric, *costs]
    head = " | ".join(f"{NAMES.get(m, m)}: best - method [95% CI], p" for m in shown)
    lines = [
        f"| method vs best ({cell(best)}) | n | {head} | verdict on {NAMES.get(metric, metric)} |",
        "|---|---|" + "---|" * len(shown) + "---|",
    ]
    best_rows = by_question(rows, best)
    for method in scored:
        if method == best:
            continue
        c = compare_rows(best_rows, by_question(rows, method), best, method, metrics=shown)
        cells = [
            f"{_number(m, c.metrics[m].diff)} [{_number(m, c.metrics[m].low)}, "
            f"{_number(m, c.metrics[m].high)}], p={c.metrics[m].p_value:.2g}"
            if m in c.metrics
            else "n/a"
            for m in shown
        ]
        verdict = c.metrics[metric].verdict if metric in c.metrics else "n/a"
        lines.append(f"| {cell(method)} | {c.questions} | {' | '.join(cells)} | {cell(verdict)} |")
    return "\n".join(lines)
