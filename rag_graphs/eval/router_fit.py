"""Fit ``auto``'s router on a run over the user's labelled questions (``rag_graphs.text.routing``).

Per segment of questions, the method is the **cheapest whose quality is within the margin of the
best**, where "within" needs both the mean gap at most ``margin`` and no paired test
(``eval.paired``) calling the best better: a gap within the margin that the test says is real
does not count as a tie. Which feature to split on (none, the kind, words, entities) is chosen
by cross-validation over the questions (``FOLDS`` folds, by a hash of the id): the split with
the lowest cost among those whose cross-validated quality stays within the margin of always
running the best method; then it is refitted on every question.

The fit reports its cross-validated quality and cost beside always-best and always-cheapest
(the methods best and cheapest on the training folds). The feature is chosen on the same folds,
so those numbers lean optimistic: ``--half tune`` fits on a fixed half and scores the router on
the other (``eval.halves``), which is the honest number.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from statistics import mean

from rag_graphs.eval.paired import NAMES, UNCLEAR, by_question, compare_rows, paired_metric, row_value
from rag_graphs.text.routing import (
    FEATURES,
    FORMAT,
    RETRIEVAL_FEATURES,
    Features,
    Router,
    Segment,
    parse_router,
)

MIN_QUESTIONS = 20
"""Fewest questions (answered by every method, with the metric) a router is fitted on."""
MIN_SEGMENT = 8
"""Fewest training questions a segment needs; smaller groups go to the default."""
FOLDS = 5
METRICS = ("em", "f1", "recall_at_5")
COSTS = ("llm_calls", "seconds", "tokens", "retrievals")

Table = dict[str, dict[str, dict]]
"""method -> question id -> result row."""


@dataclass(frozen=True)
class Score:
    """Mean quality and mean cost of a way of choosing methods, over some questions."""

    quality: float
    cost: float

    def plus(self, cost: float) -> Score:
        """The same choice charged ``cost`` more per question (routing's own, ``Overhead``)."""
        return Score(self.quality, self.cost + cost)


@dataclass(frozen=True)
class Overhead:
    """What routing itself costs per question, in the fit's cost unit, charged to a router that
    splits (a one-method router is the method itself: run it, no ``auto`` needed). On 2Wiki the
    split the fit chose saved 0.02 s a question on paper while ``auto`` cost 0.66 s more than the
    method it routed to (BENCHMARKS.md, issue 46): a fit blind to routing's own cost picks
    splits that lose."""

    question: float = 0.0
    """Computing the question's kind, words and entities (the nearest examples, spaCy)."""
    search: float = 0.0
    """The first search a split on ``RETRIEVAL_FEATURES`` needs (one retrieval, its seconds)."""

    def of(self, feature: str | None) -> float:
        """The overhead of a router splitting on ``feature`` (None: one method, none)."""
        if feature is None:
            return 0.0
        return self.question + (self.search if feature in RETRIEVAL_FEATURES else 0.0)


def _table(rows: list[dict], metric: str, questions: Iterable[str] | None) -> tuple[Table, list[str]]:
    """Rows by method and question, and the questions every method has ``metric`` for."""
    methods = list(dict.fromkeys(r["method"] for r in rows if r["method"] != "auto"))
    table = {m: by_question(rows, m) for m in methods}
    if not methods:
        return table, []
    keep = {str(q) for q in questions} if questions is not None else None
    shared = [
        q
        for q in table[methods[0]]
        if (keep is None or q in keep)
        and all(q in table[m] and row_value(table[m][q], metric) is not None for m in methods)
    ]
    return table, shared


def _means(table: Table, qids: list[str], metric: str) -> dict[str, float]:
    return {m: mean(row_value(rows[q], metric) or 0.0 for q in qids) for m, rows in table.items()}


def choose(table: Table, qids: list[str], metric: str, cost: str, margin: float) -> tuple[str, str]:
    """(method, why): the cheapest method within ``margin`` (a fraction) of the best on ``qids``."""
    quality, spent = _means(table, qids, metric), _means(table, qids, cost)
    best = max(table, key=lambda m: (quality[m], -spent[m]))
    close = []
    for m in table:
        if m == best:
            close.append((m, 1.0))
            continue
        if quality[best] - quality[m] > margin:
            continue
        best_values, m_values = ([row_value(table[x][q], metric) or 0.0 for q in qids] for x in (best, m))
        test = paired_metric(metric, best_values, m_values, best, m)
        # "unclear" (the test or the interval says the best is better) is not "close"
        if test.verdict != f"{best} better" and not test.verdict.startswith(UNCLEAR):
            close.append((m, test.p_value))
    pick, p = min(close, key=lambda mp: (spent[mp[0]], -quality[mp[0]]))
    name, unit = NAMES.get(metric, metric), NAMES.get(cost, cost)
    if pick == best:
        why = f"best {name} ({100 * quality[best]:.1f}) on {len(qids)} questions"
    else:
        why = (
            f"cheapest within {100 * margin:.1f} {name} points of the best, {best}, on {len(qids)} questions "
            f"({100 * quality[pick]:.1f} vs {100 * quality[best]:.1f}, paired p={p:.2g}; "
            f"{spent[pick]:.2f} vs {spent[best]:.2f} {unit})"
        )
    return pick, why


def _segments(
    table: Table,
    qids: list[str],
    features: dict[str, Features],
    feature: str | None,
    metric: str,
    cost: str,
    margin: float,
) -> list[Segment] | None:
    """The segments of a split on ``feature`` fitted on ``qids`` (None: the split is impossible)."""
    if feature is None:
        return []
    groups: list[tuple[dict, list[str]]] = []
    if feature == "kind":
        kinds = sorted({features[q].kind for q in qids})
        groups = [({"equals": k}, [q for q in qids if features[q].kind == k]) for k in kinds]
    else:
        values = [getattr(features[q], feature) for q in qids]
        if any(v is None for v in values):  # a retrieval feature the fit was given no search for
            return None
        cuts = sorted(set(values))[:-1]  # a cut at the largest value would leave nothing above it
        if not cuts:
            return None
        # the cut that halves the questions most evenly (the median, where ties allow it)
        cut = min(cuts, key=lambda c: abs(2 * sum(v <= c for v in values) - len(values)))
        groups = [
            ({"at_most": cut}, [q for q, v in zip(qids, values, strict=True) if v <= cut]),
            ({"above": cut}, [q for q, v in zip(qids, values, strict=True) if v > cut]),
        ]
    groups = [(bounds, g) for bounds, g in groups if len(g) >= MIN_SEGMENT]
    if len(groups) < (1 if feature == "kind" else 2):
        return None
    out = []
    for bounds, group in groups:
        method, why = choose(table, group, metric, cost, margin)
        out.append(Segment(method=method, why=why, questions=len(group), feature=feature, **bounds))
    return out


def _router(
    segments: list[Segment], default: tuple[str, str], qids: list[str], metric: str, cost: str, margin: float
) -> Router:
    return Router(
        path="",
        metric=metric,
        cost=cost,
        margin=margin,
        segments=tuple(segments),
        default=Segment(method=default[0], why=default[1], questions=len(qids)),
    )


def _score(choice: Callable[[str], str], table: Table, qids: list[str], metric: str, cost: str) -> Score:
    picked = [table[choice(q)][q] for q in qids]
    return Score(
        mean(row_value(r, metric) or 0.0 for r in picked), mean(row_value(r, cost) or 0.0 for r in picked)
    )


def _folds(qids: list[str]) -> list[list[str]]:
    order = sorted(qids, key=lambda q: hashlib.sha1(q.encode()).hexdigest())
    return [order[i::FOLDS] for i in range(FOLDS)]


def cross_validate(
    table: Table,
    qids: list[str],
    features: dict[str, Features],
    metric: str,
    cost: str,
    margin: float,
    overhead: Overhead = Overhead(),
) -> dict[str, Score]:
    """Out-of-fold quality and cost of each split (routing's ``overhead`` included) and of
    always-best and always-cheapest."""
    picks: dict[str, dict[str, str]] = {}
    for test in _folds(qids):
        held = set(test)
        train = [q for q in qids if q not in held]
        quality, spent = _means(table, train, metric), _means(table, train, cost)
        fixed = {
            "always-best": max(table, key=lambda m: (quality[m], -spent[m])),
            "always-cheapest": min(table, key=lambda m: (spent[m], -quality[m])),
        }
        default = choose(table, train, metric, cost, margin)
        for feature in (None, *FEATURES):
            segments = _segments(table, train, features, feature, metric, cost, margin)
            if segments is None:  # impossible on this fold: the split is left out of the comparison
                continue
            router = _router(segments, default, train, metric, cost, margin)
            name = f"split on {feature}" if feature else "one method"
            picks.setdefault(name, {}).update((q, router.choose(features[q])[0]) for q in test)
        for name, method in fixed.items():
            picks.setdefault(name, {}).update(dict.fromkeys(test, method))
    scores = {
        name: _score(chosen.__getitem__, table, qids, metric, cost)
        for name, chosen in picks.items()
        if len(chosen) == len(qids)
    }
    return {
        name: s.plus(overhead.of(name.removeprefix("split on "))) if name.startswith("split on ") else s
        for name, s in scores.items()
    }


@dataclass(frozen=True)
class Fit:
    """A fitted router (its JSON) and how it did."""

    router: dict
    cross_validation: dict[str, Score]
    held_out: dict[str, Score] | None = None
    held_out_questions: int = 0
    held_out_verdict: str = ""


def fit_router(
    rows: list[dict],
    features: dict[str, Features],
    *,
    metric: str = "em",
    cost: str = "llm_calls",
    margin: float = 0.02,
    questions: Iterable[str] | None = None,
    held_out: Iterable[str] | None = None,
    source: str = "",
    overhead: Overhead = Overhead(),
) -> Fit:
    """Fit a router on ``rows`` (restricted to ``questions`` when given) and score it on the
    ``held_out`` questions when given. ``margin`` is a fraction (0.02: two points). ``overhead``
    is what computing a split's features costs per question, in ``cost``'s unit: a split is
    chosen, and scored, with it.

    Raises:
        ValueError: an unknown metric or cost, fewer than two methods, or fewer than
            ``MIN_QUESTIONS`` questions every method answered with the metric.
    """
    if metric not in METRICS:
        raise ValueError(f"--metric {metric!r}: use one of {', '.join(METRICS)}")
    if cost not in COSTS:
        raise ValueError(f"--cost {cost!r}: use one of {', '.join(COSTS)}")
    table, qids = _table(rows, metric, questions)
    if len(table) < 2:
        raise ValueError(f"a router chooses between methods; the run has {len(table)} (run two or more)")
    if len(qids) < MIN_QUESTIONS:
        raise ValueError(
            f"too few questions to fit a router: {len(qids)} answered by every method with "
            f"{NAMES.get(metric, metric)} (at least {MIN_QUESTIONS}); run more questions"
        )
    cv = cross_validate(table, qids, features, metric, cost, margin, overhead)
    splits = {n: s for n, s in cv.items() if n.startswith(("split on", "one method"))}
    floor = cv["always-best"].quality - margin
    good = [n for n, s in splits.items() if s.quality >= floor]
    name = (
        min(good, key=lambda n: (splits[n].cost, -splits[n].quality))
        if good
        else max(splits, key=lambda n: (splits[n].quality, -splits[n].cost))
    )
    feature = name.removeprefix("split on ") if name.startswith("split on") else None
    default = choose(table, qids, metric, cost, margin)
    segments = _segments(table, qids, features, feature, metric, cost, margin) or []
    quality, spent = _means(table, qids, metric), _means(table, qids, cost)
    best = max(table, key=lambda m: (quality[m], -spent[m]))
    cheapest = min(table, key=lambda m: (spent[m], -quality[m]))
    raw = {
        "format": FORMAT,
        "metric": metric,
        "cost": cost,
        "margin": margin,
        "methods": list(table),
        "feature": feature,
        "segments": [_segment_json(s) for s in segments],
        "default": _segment_json(Segment(method=default[0], why=default[1], questions=len(qids))),
        "always_best": best,
        "always_cheapest": cheapest,
        "fitted_on": {"run": source, "questions": len(qids)},
        "cross_validation": {n: {"quality": s.quality, "cost": s.cost} for n, s in cv.items()},
        "chosen_by_cross_validation": name,
        "overhead": {"question": overhead.question, "search": overhead.search},
    }
    fit = Fit(router=raw, cross_validation=cv)
    if held_out is None:
        return fit
    _, check = _table(rows, metric, held_out)
    check = [q for q in check if q in features]
    if not check:
        return fit
    router = parse_router(raw, "router")
    routed = {q: router.choose(features[q])[0] for q in check}
    scores = {  # the router charged routing's own cost, as in the fit
        "router": _score(routed.__getitem__, table, check, metric, cost).plus(overhead.of(feature)),
        "always-best": _score(lambda q: best, table, check, metric, cost),
        "always-cheapest": _score(lambda q: cheapest, table, check, metric, cost),
    }
    chosen_rows = {q: table[routed[q]][q] for q in check}
    verdict = (
        compare_rows(chosen_rows, table[best], "router", best, metrics=(metric,)).metrics[metric].verdict
    )
    return Fit(raw, cv, scores, len(check), verdict)


def _segment_json(s: Segment) -> dict:
    out = {"method": s.method, "why": s.why, "questions": s.questions}
    if s.feature is not None:
        out["feature"] = s.feature
        out |= {k: v for k in ("equals", "above", "at_most") if (v := getattr(s, k)) is not None}
    return out


def fit_table(fit: Fit) -> str:
    """Markdown: the router's segments, then its quality and cost beside always-best and
    always-cheapest, cross-validated and (when scored) on the held-out questions."""
    raw = fit.router
    name, unit = NAMES.get(raw["metric"], raw["metric"]), NAMES.get(raw["cost"], raw["cost"])
    router = parse_router(raw, "router")
    lines = ["| segment | method | why |", "|---|---|---|"]
    for s in (*router.segments, router.default):
        where = "otherwise" if s is router.default and router.segments else s.describe()
        lines.append(f"| {where} | {s.method} | {s.why} |")
    lines += [
        "",
        f"| choice | {name} (CV) | {unit} (CV) |"
        + (f" {name} (held out) | {unit} (held out) |" if fit.held_out else ""),
        "|---|---|---|" + ("---|---|" if fit.held_out else ""),
    ]
    chosen = raw["chosen_by_cross_validation"]
    for n in ("router", "always-best", "always-cheapest"):
        cv = fit.cross_validation[chosen if n == "router" else n]
        label = (
            f"router ({chosen})"
            if n == "router"
            else f"{n} ({raw['always_best' if n == 'always-best' else 'always_cheapest']})"
        )
        cells = [f"{100 * cv.quality:.1f}", f"{cv.cost:.3g}"]
        if fit.held_out:
            cells += [f"{100 * fit.held_out[n].quality:.1f}", f"{fit.held_out[n].cost:.3g}"]
        lines.append(f"| {label} | {' | '.join(cells)} |")
    spent = raw.get("overhead") or {}
    if any(spent.values()):
        lines += [
            "",
            f"A split's {unit} include routing's own per question: {spent.get('question', 0):.3g} for the "
            f"question's features, {spent.get('search', 0):.3g} more for a first search.",
        ]
    return "\n".join(lines)


def write_router(fit: Fit, path: str | Path) -> Path:
    """Write the router JSON (with the fit's held-out scores, when any) to ``path``."""
    out = Path(path).expanduser()
    raw = dict(fit.router)
    if fit.held_out:
        raw["held_out"] = {
            "questions": fit.held_out_questions,
            **{n: {"quality": s.quality, "cost": s.cost} for n, s in fit.held_out.items()},
            "router_vs_always_best": fit.held_out_verdict,
        }
    out.write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")
    return out
