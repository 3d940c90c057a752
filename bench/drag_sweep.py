"""DRAG and IterDRAG's inference-scaling sweep: quality against effective context length.

Yue et al. 2024 scale RAG's inference compute with three knobs: retrieved documents per
search (k), in-context demonstrations (m) and, for IterDRAG, follow-up iterations (n). The
*effective context length* of a run is every input token of every model call it made
(``prompt_tokens`` in the evaluator's rows). This sweep runs DRAG over (k, m) and IterDRAG
over (k, m, n) on the first ``--limit`` dev questions of a ``../shared/eval`` set with the
embedded models and the shipped demonstrations (``RagContext.demonstrations="builtin"``),
writes ``bench/results/<dataset>_drag_sweep.png`` (F1 and answer-contains against the mean
effective context length, log scale, as the paper's plot) and the section
``drag-sweep-<dataset>`` of BENCHMARKS.md.

Resumable: each configuration is a run directory under ``bench_runs/drag-sweep-<dataset>-<limit>/``.

Run: ``make bench`` or ``.venv/bin/python bench/drag_sweep.py --dataset hotpotqa --limit 10``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
from pathlib import Path

from sections import replace_section

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval"
DRAG = [(1, 0), (2, 0), (4, 0), (4, 2), (8, 2), (8, 4)]
"""DRAG's (k, m)."""
ITERDRAG = [(2, 2, 1), (4, 2, 2), (8, 2, 3)]
"""IterDRAG's (k, m, n)."""


def configurations() -> list[tuple[str, str, dict]]:
    """``(name, method, RagContext overrides)`` of every point of the sweep."""
    out = [(f"drag k={k} m={m}", "drag", {"k": k, "num_demos": m}) for k, m in DRAG]
    out += [
        (f"iterdrag k={k} m={m} n={n}", "iterdrag", {"k": k, "num_demos": m, "iterdrag_iterations": n})
        for k, m, n in ITERDRAG
    ]
    return out


def measure(dataset: str, limit: int, store: str) -> list[dict]:
    """Run (or resume) every configuration; one summary per configuration."""
    from rag_graphs.config.context import RagContext
    from rag_graphs.eval import EvalOptions, evaluate, read_rows

    root = ROOT / "bench_runs" / f"drag-sweep-{dataset}-{limit}"
    points = []
    for name, method, overrides in configurations():
        run_dir = root / name.replace(" ", "_").replace("=", "")
        ctx = RagContext(demonstrations="builtin", search_cache=0, **overrides)
        print(f"== {name}", flush=True)
        evaluate(
            EVAL / dataset,
            [method],
            context=ctx,
            options=EvalOptions(limit=limit, run_dir=run_dir, eval_store=store),
        )
        rows = [r for r in read_rows(run_dir) if not r.get("error")]
        points.append(
            {
                "name": name,
                "method": method,
                "n": len(rows),
                "context": statistics.mean(r["prompt_tokens"] for r in rows),
                "f1": 100 * statistics.mean(r["f1"] for r in rows),
                "contains": 100 * statistics.mean(r["contains"] for r in rows),
                "r5": 100 * statistics.mean(r["recall_at_5"] for r in rows),
                "calls": statistics.mean(r["llm_calls"] for r in rows),
                "seconds": statistics.mean(r["seconds"] for r in rows),
            }
        )
    return points


def plot(points: list[dict], path: Path) -> None:
    """F1 and answer-contains against effective context length, one series per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter, StrMethodFormatter

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True)
    for ax, metric, label in zip(axes, ("f1", "contains"), ("F1", "answer contains gold (%)"), strict=True):
        for method, marker in (("drag", "o"), ("iterdrag", "s")):
            mine = sorted((p for p in points if p["method"] == method), key=lambda p: p["context"])
            ax.plot([p["context"] for p in mine], [p[metric] for p in mine], marker=marker, label=method)
            for p in mine:
                ax.annotate(p["name"].split(" ", 1)[1], (p["context"], p[metric]), fontsize=6)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks([300, 1000, 3000])
        ax.set_xlabel("effective context length (input tokens per question, all calls)")
        ax.set_ylabel(label)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="hotpotqa", help="a folder under ../shared/eval")
    parser.add_argument("--limit", type=int, default=max(1, int(os.environ.get("BENCH_LIMIT", "30")) // 3))
    parser.add_argument(
        "--store", default=str(ROOT / ".rag-graphs" / "eval.db"), help="Milvus Lite path for the corpus"
    )
    args = parser.parse_args()
    points = measure(args.dataset, args.limit, args.store)
    results = ROOT / "bench" / "results"
    results.mkdir(exist_ok=True)
    image = results / f"{args.dataset}_drag_sweep.png"
    plot(points, image)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    header = "| configuration | n | effective context (tokens) | LLM calls | F1 | contains | R@5 | s/q |"
    lines = [header, "|---|---|---|---|---|---|---|---|"]
    for p in sorted(points, key=lambda p: (p["method"], p["context"])):
        lines.append(
            f"| {p['name']} | {p['n']} | {p['context']:,.0f} | {p['calls']:.1f} | {p['f1']:.1f} | "
            f"{p['contains']:.1f} | {p['r5']:.1f} | {p['seconds']:.1f} |"
        )
    body = "\n".join(
        [
            f"First {args.limit} questions of `../shared/eval/{args.dataset}/dev.jsonl`, open retrieval "
            "(hybrid search), embedded SmolLM2-135M + MiniLM, the shipped demonstrations "
            f"(`demonstrations=builtin`), one question at a time; {machine}. k = documents per search, "
            "m = demonstrations, n = IterDRAG's follow-up cap; effective context = input tokens of every "
            "model call of a question (the paper's measure), mean over questions.",
            "Produced by `.venv/bin/python bench/drag_sweep.py "
            f"--dataset {args.dataset} --limit {args.limit}` (part of `make bench`).",
            "",
            *lines,
            "",
            f"![quality against effective context length](bench/results/{image.name})",
        ]
    )
    heading = "DRAG / IterDRAG: quality against effective context length"
    replace_section(f"drag-sweep-{args.dataset}", body, heading=heading)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
