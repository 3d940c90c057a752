"""Per-method summaries of result rows, as a Markdown table and plots.

Everything here is recomputed from ``rows.jsonl``, so ``rag-graphs eval
--report RUN_DIR`` re-renders a report (say, after a resumed run) without
asking a single question again.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any

from rag_graphs.eval.frontier import as_options, choice_lines, dominated, frontier_cost
from rag_graphs.eval.markdown import cell
from rag_graphs.eval.metrics import RANKS, bootstrap_ci
from rag_graphs.eval.rows import ANSWER_METRICS, CONFIG, read_config, read_rows, row_reader
from rag_graphs.support.terminal import visible
from rag_graphs.text.jsonl import existing_path

COLUMNS = {
    "em": "EM",
    "f1": "F1",
    "contains": "contains",
    "recall": "SP recall",
    **{f"recall_at_{k}": f"R@{k}" for k in RANKS},
}
"""Quality metric (row field) -> its column in the table, in column order."""
QUALITY = tuple(COLUMNS)
JUDGED = "judge:"
"""Prefix of a judge's or user evaluator's score in ``Summary.quality`` (a row's ``judged``
dict; the prefix keeps a user's key "f1" apart from the lexical F1)."""
LABELS = {
    "f1": "answer F1",
    "recall": "SP recall (all retrieved)",
    **{f"recall_at_{k}": f"R@{k} (top {k} of the ranking)" for k in RANKS},
}


@dataclass
class Summary:
    """One method's aggregate over its rows with one reader (quality with 95% bootstrap intervals)."""

    method: str
    n: int
    errors: int
    quality: dict[str, tuple[float, float, float]]  # metric -> (mean, low, high); nan when absent
    llm_calls: float
    tokens: float
    retrievals: float
    seconds: float
    model_share: float
    search_share: float
    overhead_share: float
    reader: str = "generate"
    """The reader that answered (``RagContext.reader`` resolved): a run may compare readers."""

    @property
    def label(self) -> str:
        """The method, with its reader when that is not the generator (``naive (extract)``)."""
        return self.method if self.reader == "generate" else f"{self.method} ({self.reader})"


def summarize(rows: list[dict]) -> list[Summary]:
    """One ``Summary`` per method and reader, in the order they first appear in ``rows``."""
    by_method: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        by_method.setdefault((row["method"], row_reader(row)), []).append(row)
    judged = list(dict.fromkeys(key for r in rows for key in r.get("judged") or {}))
    out = []
    for (method, reader), group in by_method.items():
        quality = {}
        for metric in [*QUALITY, *(JUDGED + key for key in judged)]:
            field = metric.removeprefix(JUDGED)
            scores = ((r.get("judged") or {}) if metric.startswith(JUDGED) else r for r in group)
            values = [float(s[field]) for s in scores if s.get(field) is not None]
            quality[metric] = (mean(values), *bootstrap_ci(values)) if values else (float("nan"),) * 3
        wall = sum(r["seconds"] for r in group) or float("nan")
        model = sum(r["model_seconds"] for r in group)
        search = sum(r["search_seconds"] for r in group)
        out.append(
            Summary(
                method=method,
                n=len(group),
                errors=sum(1 for r in group if r.get("error")),
                quality=quality,
                llm_calls=mean(r["llm_calls"] for r in group),
                tokens=mean(r["prompt_tokens"] + r["completion_tokens"] for r in group),
                retrievals=mean(r["retrievals"] for r in group),
                seconds=mean(r["seconds"] for r in group),
                model_share=model / wall,
                search_share=search / wall,
                overhead_share=max(0.0, wall - model - search) / wall,
                reader=reader,
            )
        )
    return out


def common_questions(rows: list[dict]) -> list[dict]:
    """The rows of the questions every method (with every reader) has answered.

    A resumed or extended run can hold methods run on different numbers of
    questions; comparing their means would compare different samples.
    """
    methods = {(r["method"], row_reader(r)) for r in rows}
    answered: dict[str, set[tuple[str, str]]] = {}
    for r in rows:
        answered.setdefault(r["id"], set()).add((r["method"], row_reader(r)))
    shared = {q for q, ms in answered.items() if ms == methods}
    return [r for r in rows if r["id"] in shared]


def _label(text: object) -> str:
    """Data as a plot label: escapes shown, ``$`` literal (matplotlib reads ``$...$`` as math,
    and a method named ``$\\x$`` would fail the plot)."""
    return visible(text).replace("$", "\\$")


def _pct(value: tuple[float, float, float]) -> str:
    mean_, low, high = value
    if mean_ != mean_:  # nan: the dataset has no gold for this metric
        return "n/a"
    return f"{100 * mean_:.1f} [{100 * low:.0f}-{100 * high:.0f}]"


def _answered(summaries: list[Summary]) -> bool:
    """True when some method has answer scores (False for a retrieval-only run)."""
    return any(not math.isnan(s.quality[m][0]) for s in summaries for m in ANSWER_METRICS)


def markdown_table(summaries: list[Summary]) -> str:
    """Methods x metrics; quality in percent with its 95% interval in brackets.

    The answer columns (EM, F1, contains) are left out when no method has answer
    scores (a retrieval-only run); a method without a metric shows ``n/a``, never 0.
    """
    shown = [m for m in QUALITY if m not in ANSWER_METRICS or _answered(summaries)]
    shown += [m for m in (summaries[0].quality if summaries else {}) if m.startswith(JUDGED)]
    cost = ("LLM calls", "tokens", "retrievals", "s/question", "model", "search", "overhead")
    readers = len({s.reader for s in summaries}) > 1  # a reader column when the run compares readers
    columns = (
        "method",
        *(["reader"] if readers else []),
        "n",
        *(COLUMNS.get(m, cell(m.removeprefix(JUDGED))) for m in shown),
        *cost,
    )
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for s in summaries:
        errors = f" ({s.errors} failed)" if s.errors else ""
        cells = [
            cell(s.method),
            *([s.reader] if readers else []),
            f"{s.n}{errors}",
            *(_pct(s.quality[m]) for m in shown),
            f"{s.llm_calls:.1f}",
            f"{s.tokens:.0f}",
            f"{s.retrievals:.1f}",
            f"{s.seconds:.1f}",
            f"{100 * s.model_share:.0f}%",
            f"{100 * s.search_share:.0f}%",
            f"{100 * s.overhead_share:.1f}%",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def by_type_table(rows: list[dict]) -> str:
    """EM / F1 / contains per method and reader (the columns) for each question type (the
    rows: the dataset's ``type``, e.g. bridge / comparison), in percent, ``n`` questions each;
    empty when no row has answer scores. Which kinds of question a reader cannot answer shows
    here, not in the means."""
    scored = [r for r in rows if r.get("f1") is not None]
    if not scored:
        return ""
    variants = list(dict.fromkeys((r["method"], row_reader(r)) for r in scored))
    types = sorted({str(r.get("type") or "-") for r in scored})
    names = [m if rd == "generate" else f"{m} ({rd})" for m, rd in variants]
    lines = [
        "| type | n | " + " | ".join(f"{cell(n)} EM / F1 / contains" for n in names) + " |",
        "|" + "---|" * (len(names) + 2),
    ]
    for kind in types:
        cells, n = [], 0
        for method, reader in variants:
            group = [
                r
                for r in scored
                if r["method"] == method and row_reader(r) == reader and str(r.get("type") or "-") == kind
            ]
            n = max(n, len(group))
            means = [
                100 * mean(float(r[m] or 0) for r in group) if group else float("nan") for m in ANSWER_METRICS
            ]
            cells.append(" / ".join("n/a" if v != v else f"{v:.1f}" for v in means))
        lines.append(f"| {cell(kind)} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _figure(width: float = 6.4) -> tuple[Any, Any]:
    """A new figure and its axes (matplotlib without a display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, 4.2), dpi=120)


def _save_bars(fig: Any, ax: Any, path: Path, labels: list[str], ylabel: str, title: str) -> Path:
    """Finish a grouped bar chart in percent (one group per label) and write it to ``path``."""
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, ax, path, ylabel, title)


def _save(fig: Any, ax: Any, path: Path, ylabel: str, title: str) -> Path:
    import matplotlib.pyplot as plt

    ax.set_ylabel(ylabel)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _bar_offsets(groups: int, bars: int, index: int) -> tuple[list[float], float]:
    """The x positions of bar ``index`` of ``bars`` side by side in each of ``groups`` groups."""
    width = 0.8 / max(1, bars)
    return [g + index * width - 0.4 + width / 2 for g in range(groups)], width


def plot_quality_cost(
    summaries: list[Summary],
    path: Path,
    metric: str = "f1",
    cost: str = "llm_calls",
    dominated: Collection[str] = (),
) -> Path:
    """``metric`` (F1 by default; R@5 for a run without answers), with its interval, against
    mean ``cost`` per question, one point per method (methods without the metric are left out);
    the frontier's methods filled and joined, the ``dominated`` ones hollow (``eval.frontier``)."""
    fig, ax = _figure()
    front = []
    for s in summaries:
        value, low, high = (100 * v for v in s.quality[metric])
        if math.isnan(value):
            continue
        x = getattr(s, cost)
        face = "none" if s.method in dominated else None
        ax.errorbar(x, value, yerr=[[value - low], [high - value]], fmt="o", capsize=3, mfc=face)
        ax.annotate(_label(s.method), (x, value), textcoords="offset points", xytext=(5, 4), fontsize=8)
        front += [] if s.method in dominated else [(x, value)]
    if len(front) > 1:
        ax.plot(*zip(*sorted(front), strict=True), color="grey", alpha=0.5, lw=1, label="frontier")
        ax.legend(fontsize=8)
    ax.set_xlabel(f"{'LLM calls' if cost == 'llm_calls' else cost} per question (mean)")
    ax.grid(alpha=0.3)
    ylabel = f"{LABELS.get(metric, metric)} (%) with 95% interval"
    return _save(
        fig, ax, path, ylabel, "Quality vs cost" if metric in ANSWER_METRICS else "Retrieval vs cost"
    )


def plot_recall_at_k(summaries: list[Summary], path: Path) -> Path:
    """Per method, SP recall over everything retrieved beside R@2 and R@5 of the final
    ranking, as bars with their 95% intervals (metrics no method has are left out)."""
    metrics = [
        m
        for m in ("recall", *(f"recall_at_{k}" for k in RANKS))
        if any(not math.isnan(s.quality[m][0]) for s in summaries)
    ]
    fig, ax = _figure(max(6.4, 1.2 * len(summaries)))
    for i, metric in enumerate(metrics):
        values = [[0.0 if math.isnan(v) else 100 * v for v in s.quality[metric]] for s in summaries]
        errors = [[v - low for v, low, _ in values], [high - v for v, _, high in values]]
        xs, width = _bar_offsets(len(summaries), len(metrics), i)
        ax.bar(xs, [v for v, _, _ in values], width=width, yerr=errors, capsize=2, label=LABELS[metric])
    title = "Passage recall: everything retrieved vs the top of the final context"
    methods = [_label(s.label) for s in summaries]
    return _save_bars(fig, ax, path, methods, "gold passages found (%) with 95% interval", title)


def plot_recall_by_group(rows: list[dict], path: Path) -> Path:
    """Supporting-passage recall per method, grouped by hop count (or question type when all
    questions have the same hop count)."""
    scored = [r for r in rows if r.get("recall") is not None]
    key = "question_hops" if len({r.get("question_hops") for r in scored}) > 1 else "type"
    groups = sorted({str(r.get(key)) for r in scored})
    methods = list(dict.fromkeys(r["method"] for r in scored))
    fig, ax = _figure(max(6.4, 1.2 * len(methods)))
    for g, group in enumerate(groups):
        heights = []
        for method in methods:
            values = [r["recall"] for r in scored if r["method"] == method and str(r.get(key)) == group]
            heights.append(100 * mean(values) if values else 0.0)
        xs, width = _bar_offsets(len(methods), len(groups), g)
        ax.bar(xs, heights, width=width, label=_label(f"{key} = {group}"))
    title = f"Recall of the gold passages, by {key}"
    return _save_bars(fig, ax, path, [_label(m) for m in methods], "supporting-passage recall (%)", title)


def _recall_note(k: object) -> str:
    """What the recall columns measure (and what a small k means for R@k)."""
    ranks = " / ".join(f"R@{r}" for r in RANKS)
    tops = " / ".join(str(r) for r in RANKS)
    note = (
        f"SP recall: the gold passages among everything a run retrieved; {ranks}: among the top "
        f"{tops} of its final context (`documents`, one ranking, best first)"
    )
    if isinstance(k, int) and k < max(RANKS):
        return f"{note}; with k={k}, a method that retrieves once has at most {k} passages to rank."
    return f"{note}."


def write_report(run_dir: str | Path) -> Path:
    """Write ``report.md`` and the plots into ``run_dir`` from its rows; return the report path."""
    run_dir = existing_path(run_dir, "dir", "run directory")
    rows = read_rows(run_dir)
    if not rows:
        raise ValueError(f"{run_dir} has no result rows ({run_dir / 'rows.jsonl'})")
    config = read_config(run_dir) if (run_dir / CONFIG).exists() else {}
    summaries = summarize(rows)
    common = common_questions(rows) or rows
    # The plots compare methods, so they use the questions all of them answered.
    fair = summarize(common)
    headline = "f1" if _answered(fair) else "recall_at_5"
    # The choice between them takes each method with its reader as one option (``naive (extract)``).
    options = as_options(common)
    choices = summarize(options)
    cost = frontier_cost(choices)
    lost = {d.method for d in dominated(choices, headline, cost)}
    plots = [plot_quality_cost(choices, run_dir / "quality_vs_cost.png", headline, cost, lost)]
    if any(r.get(f"recall_at_{k}") is not None for r in rows for k in RANKS):
        plots.append(plot_recall_at_k(fair, run_dir / "recall_at_k.png"))
    if any(r.get("recall") is not None for r in rows):
        plots.append(plot_recall_by_group(rows, run_dir / "recall_by_group.png"))
    questions = len({r["id"] for r in rows})
    k = config.get("k")
    lines = [
        # config.json is data too (a shared run folder): shown with its escapes visible
        visible(
            f"# Evaluation: {config.get('dataset_name', run_dir.name)} ({config.get('setting', '?')} setting)"
        ),
        "",
        visible(
            f"{questions} questions; chat model `{config.get('chat_model')}`, embeddings "
            f"`{config.get('embeddings')}`, k={k}, search `{config.get('search_mode')}`, "
            f"reader {', '.join(f'`{r}`' for r in config.get('readers') or ['generate'])}."
        ),
        *(
            [
                "Retrieval only (`--retrieval-only`): every run stopped before its answer, so there are "
                "no answer scores, and the cost is what retrieval took."
            ]
            if config.get("retrieval_only")
            else []
        ),
        "Quality in percent with a 95% bootstrap interval; cost as means per question; "
        "time split as shares of wall time (overhead = graph orchestration outside model and search).",
        _recall_note(k),
        "",
        markdown_table(summaries),
        "",
    ]
    if len(common) < len(rows):
        shared = len({r["id"] for r in common})
        lines += [
            f"Methods ran on different questions; on the {shared} questions every method answered:",
            "",
            markdown_table(fair),
            "",
        ]
    if len({str(r.get("type") or "-") for r in rows}) > 1 and (types := by_type_table(rows)):
        lines += ["By question type (EM / F1 / contains in percent):", "", types, ""]
    lines += choice_lines(options, choices, headline, cost)
    lines += [
        *[f"![{p.stem}]({p.name})" for p in plots],
        "",
    ]
    report = run_dir / "report.md"
    report.write_text("\n".join(lines), encoding="utf-8")
    return report
