"""The quality-vs-cost frontier: which methods no one should pick on this set.

A method is **dominated** when another method has at least its mean quality at no more than its
mean cost, and is strictly ahead on one of the two. The rest, the non-dominated methods, are the
frontier: each is the best buy at its price. Means alone can dominate by noise, so each
domination is checked with the paired tests (``rag_graphs.eval.paired``) on the questions both
answered: it is **confirmed** when the dominating method is better on quality or on cost
(p < 0.05) and not worse on the other; else it is "within noise", and the report says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rag_graphs.eval.markdown import cell
from rag_graphs.eval.paired import NAMES, against_best, by_question, compare_rows
from rag_graphs.eval.rows import row_reader

_BACKED = {True: "confirmed by the paired tests", False: "by means; within noise"}


@dataclass(frozen=True)
class Dominated:
    """``method`` is dominated by ``by`` on ``metric`` and ``cost``."""

    method: str
    by: str
    confirmed: bool
    """The paired tests back it (see the module docstring)."""


def frontier_cost(summaries: Sequence) -> str:
    """The cost a run's frontier is drawn on: LLM calls, or seconds when no method made a call
    (a retrieval-only run, where calls would tie every method at 0)."""
    return "llm_calls" if any(s.llm_calls > 0 for s in summaries) else "seconds"


def dominated(summaries: Sequence, metric: str, cost: str, rows: list[dict] | None = None) -> list[Dominated]:
    """The dominated methods among ``summaries`` (``report.Summary``), each with a method that
    dominates it (the cheapest such), checked with paired tests on ``rows`` when given.
    Methods without ``metric`` take no part."""
    scored = [s for s in summaries if not math.isnan(s.quality[metric][0])]
    out = []
    for s in scored:
        q, c = s.quality[metric][0], getattr(s, cost)
        better = [
            o
            for o in scored
            if o is not s
            and o.quality[metric][0] >= q
            and getattr(o, cost) <= c
            and (o.quality[metric][0] > q or getattr(o, cost) < c)
        ]
        if not better:
            continue
        by = min(better, key=lambda o: (getattr(o, cost), -o.quality[metric][0]))
        out.append(Dominated(s.method, by.method, _confirmed(rows, by.method, s.method, metric, cost)))
    return out


def _confirmed(rows: list[dict] | None, by: str, method: str, metric: str, cost: str) -> bool:
    """Whether the paired tests back ``by`` dominating ``method``."""
    if not rows:
        return False
    try:
        c = compare_rows(by_question(rows, by), by_question(rows, method), by, method, metrics=(metric, cost))
    except ValueError:
        return False
    verdicts = [c.metrics[m].verdict for m in (metric, cost) if m in c.metrics]
    return any(v == f"{by} better" for v in verdicts) and not any(v == f"{method} better" for v in verdicts)


def frontier_lines(summaries: Sequence, metric: str, cost: str, rows: list[dict] | None = None) -> list[str]:
    """The report's frontier paragraph: the non-dominated methods, then each dominated one."""
    lost = dominated(summaries, metric, cost, rows)
    if len([s for s in summaries if not math.isnan(s.quality[metric][0])]) < 2:
        return []
    names = {d.method for d in lost}
    keep = [
        cell(s.method) for s in summaries if s.method not in names and not math.isnan(s.quality[metric][0])
    ]
    what = f"{NAMES.get(metric, metric)} against {NAMES.get(cost, cost)} per question"
    lines = [f"**Frontier** ({what}; filled points on the plot): {', '.join(keep)}."]
    if lost:
        lines.append("Dominated on this set (no one should pick them here):")
        lines += [
            f"- {cell(d.method)}: {cell(d.by)} has at least its {NAMES.get(metric, metric)} at no more "
            f"{NAMES.get(cost, cost)} ({_BACKED[d.confirmed]})"
            for d in lost
        ]
    else:
        lines.append("No method is dominated on this set.")
    return lines


def as_options(rows: list[dict]) -> list[dict]:
    """``rows`` with each method and its reader as one option to choose (``naive (extract)``):
    a run that compares readers compares them on the frontier and in the paired tests too."""
    return [r | {"method": _option(r), "reader": "generate"} for r in rows]


def _option(row: dict) -> str:
    """A row's method as one option: with its reader when that is not the generator."""
    reader = row_reader(row)
    return row["method"] if reader == "generate" else f"{row['method']} ({reader})"


def choice_lines(common: list[dict], fair: Sequence[Any], metric: str, cost: str) -> list[str]:
    """Which method to pick, for the report: the frontier and every method paired against the best
    (``eval.paired``), on the questions every method answered (``fair``: their summaries)."""
    best = against_best(common, metric, costs=("llm_calls", "seconds"))
    if not best:
        return []
    return [
        *frontier_lines(fair, metric, cost, common),
        "",
        "Paired against the best method on the same questions (difference in points for quality, "
        "in calls and seconds for cost; exact McNemar or permutation test p; `rag-graphs eval --report RUN "
        "--compare A,B` for every metric):",
        "",
        best,
        "",
    ]
