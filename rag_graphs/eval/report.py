"""Per-method summaries of result rows, as a Markdown table and plots.

Everything here is recomputed from ``rows.jsonl``, so ``rag-graphs eval
--report RUN_DIR`` re-renders a report (say, after a resumed run) without
asking a single question again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from statistics import mean

from rag_graphs.eval.metrics import bootstrap_ci
from rag_graphs.eval.runner import CONFIG, read_config, read_rows
from rag_graphs.jsonl import existing_path

QUALITY = ("em", "f1", "contains", "recall")


@dataclass
class Summary:
    """One method's aggregate over its rows (quality with 95% bootstrap intervals)."""

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


def summarize(rows: list[dict]) -> list[Summary]:
    """One ``Summary`` per method, in the order methods first appear in ``rows``."""
    by_method: dict[str, list[dict]] = {}
    for row in rows:
        by_method.setdefault(row["method"], []).append(row)
    out = []
    for method, group in by_method.items():
        quality = {}
        for metric in QUALITY:
            values = [float(r[metric]) for r in group if r.get(metric) is not None]
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
            )
        )
    return out


def common_questions(rows: list[dict]) -> list[dict]:
    """The rows of the questions every method has answered.

    A resumed or extended run can hold methods run on different numbers of
    questions; comparing their means would compare different samples.
    """
    methods = {r["method"] for r in rows}
    answered: dict[str, set[str]] = {}
    for r in rows:
        answered.setdefault(r["id"], set()).add(r["method"])
    shared = {q for q, ms in answered.items() if ms == methods}
    return [r for r in rows if r["id"] in shared]


def _pct(value: tuple[float, float, float]) -> str:
    mean_, low, high = value
    if mean_ != mean_:  # nan: the dataset has no gold for this metric
        return "n/a"
    return f"{100 * mean_:.1f} [{100 * low:.0f}-{100 * high:.0f}]"


def markdown_table(summaries: list[Summary]) -> str:
    """Methods x metrics; quality in percent with its 95% interval in brackets."""
    head = (
        "| method | n | EM | F1 | contains | SP recall | LLM calls | tokens | retrievals "
        "| s/question | model | search | overhead |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for s in summaries:
        q = s.quality
        errors = f" ({s.errors} failed)" if s.errors else ""
        lines.append(
            f"| {s.method} | {s.n}{errors} | {_pct(q['em'])} | {_pct(q['f1'])} | {_pct(q['contains'])} "
            f"| {_pct(q['recall'])} | {s.llm_calls:.1f} | {s.tokens:.0f} | {s.retrievals:.1f} "
            f"| {s.seconds:.1f} | {100 * s.model_share:.0f}% | {100 * s.search_share:.0f}% "
            f"| {100 * s.overhead_share:.1f}% |"
        )
    return "\n".join(lines)


def plot_quality_cost(summaries: list[Summary], path: Path) -> Path:
    """F1 (with its interval) against mean LLM calls per question, one point per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for s in summaries:
        f1, low, high = (100 * v for v in s.quality["f1"])
        ax.errorbar(s.llm_calls, f1, yerr=[[f1 - low], [high - f1]], fmt="o", capsize=3)
        ax.annotate(s.method, (s.llm_calls, f1), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xlabel("LLM calls per question (mean)")
    ax.set_ylabel("answer F1 (%) with 95% interval")
    ax.set_title("Quality vs cost")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_recall_by_group(rows: list[dict], path: Path) -> Path:
    """Supporting-passage recall per method, grouped by hop count (or question type when all
    questions have the same hop count)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scored = [r for r in rows if r.get("recall") is not None]
    key = "hops" if len({r.get("hops") for r in scored}) > 1 else "type"
    groups = sorted({str(r.get(key)) for r in scored})
    methods = list(dict.fromkeys(r["method"] for r in scored))
    fig, ax = plt.subplots(figsize=(max(6.4, 1.2 * len(methods)), 4.2), dpi=120)
    width = 0.8 / max(1, len(groups))
    for g, group in enumerate(groups):
        heights = []
        for method in methods:
            values = [r["recall"] for r in scored if r["method"] == method and str(r.get(key)) == group]
            heights.append(100 * mean(values) if values else 0.0)
        xs = [m + g * width - 0.4 + width / 2 for m in range(len(methods))]
        ax.bar(xs, heights, width=width, label=f"{key} = {group}")
    ax.set_xticks(range(len(methods)), methods, rotation=30, ha="right")
    ax.set_ylabel("supporting-passage recall (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"Recall of the gold passages, by {key}")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def write_report(run_dir: str | Path) -> Path:
    """Write ``report.md`` and the plots into ``run_dir`` from its rows; return the report path."""
    run_dir = existing_path(run_dir, "dir", "run directory")
    rows = read_rows(run_dir)
    if not rows:
        raise ValueError(f"{run_dir} has no result rows ({run_dir / 'rows.jsonl'})")
    config = read_config(run_dir) if (run_dir / CONFIG).exists() else {}
    summaries = summarize(rows)
    common = common_questions(rows) or rows
    # The plot compares methods, so it uses the questions all of them answered.
    plots = [plot_quality_cost(summarize(common), run_dir / "quality_vs_cost.png")]
    if any(r.get("recall") is not None for r in rows):
        plots.append(plot_recall_by_group(rows, run_dir / "recall_by_group.png"))
    questions = len({r["id"] for r in rows})
    lines = [
        f"# Evaluation: {config.get('dataset_name', run_dir.name)} ({config.get('setting', '?')} setting)",
        "",
        f"{questions} questions; chat model `{config.get('chat_model')}`, embeddings "
        f"`{config.get('embeddings')}`, k={config.get('k')}, search `{config.get('search_mode')}`.",
        "Quality in percent with a 95% bootstrap interval; cost as means per question; "
        "time split as shares of wall time (overhead = graph orchestration outside model and search).",
        "",
        markdown_table(summaries),
        "",
    ]
    if len(common) < len(rows):
        shared = len({r["id"] for r in common})
        lines += [
            f"Methods ran on different questions; on the {shared} questions every method answered:",
            "",
            markdown_table(summarize(common)),
            "",
        ]
    lines += [
        *[f"![{p.stem}]({p.name})" for p in plots],
        "",
    ]
    report = run_dir / "report.md"
    report.write_text("\n".join(lines), encoding="utf-8")
    return report
