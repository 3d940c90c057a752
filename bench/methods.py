"""Per-method benchmark on the shared multi-hop QA sets, regenerating BENCHMARKS.md's tables.

Runs methods on the first ``--limit`` questions of ``../shared/eval/<dataset>/dev.jsonl``
with the embedded models, open retrieval over the dataset's corpus (indexed once
into ``.rag-graphs/eval.db``), through the evaluator (``rag_graphs.eval.evaluate``).
Resumable: the run directory ``bench_runs/<dataset>-open-<limit>`` keeps its rows,
so an interrupted run continues where it stopped and methods can be added to a
run later. The section ``<dataset>`` of BENCHMARKS.md and the plots in
``bench/results/`` are rewritten from the measured rows only.

Run: ``make bench`` or ``.venv/bin/python bench/methods.py --dataset musique --limit 10 naive ircot``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
from pathlib import Path

from sections import replace_section

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval"
GRAPHS_I = ["naive", "fixed_step", "iterative", "react", "ircot", "self_rag", "crag"]
GRAPHS_II = [
    "hyde", "multi_query", "rag_fusion", "decomposition", "step_back",
    "planned", "raptor", "drag", "iterdrag", "auto",
]  # fmt: skip
RAPTOR_DATASETS = {"2wikimultihopqa"}
"""Corpora RAPTOR runs on by default. Its tree costs ~1 summary per 6,000 characters of corpus:
2Wiki's 0.56 M characters ~45 min of SmolLM2 on one core; HotpotQA's 5.5 M ~3 h; MuSiQue's 2.3 M ~1.2 h."""
PLOTS = {
    "quality_vs_cost.png": "quality vs cost",
    "recall_at_k.png": "recall and R@k",
    "recall_by_group.png": "recall by type",
}
"""The report's plots BENCHMARKS.md shows, with their alt text."""
TITLES = {"hotpotqa": "HotpotQA", "musique": "MuSiQue", "2wikimultihopqa": "2WikiMultihopQA"}


def run(dataset: str, methods: list[str], limit: int, store: str, *, report_only: bool = False) -> None:
    """Evaluate ``methods`` on the first ``limit`` questions and rewrite the dataset's section.

    ``report_only`` skips the questions and rewrites the section from the rows stored so far
    (an interrupted run reports what it measured; the methods are compared on the questions
    all of them answered).
    """
    from rag_graphs.config.context import RagContext
    from rag_graphs.eval import (
        EvalOptions,
        common_questions,
        evaluate,
        markdown_table,
        read_rows,
        summarize,
        write_report,
    )
    from rag_graphs.text.demonstrations import load_demonstrations

    run_dir = ROOT / "bench_runs" / f"{dataset}-open-{limit}"
    if not report_only:  # DRAG and IterDRAG show the shipped demonstrations (the default)
        evaluate(EVAL / dataset, methods, options=EvalOptions(limit=limit, run_dir=run_dir, eval_store=store))
    write_report(run_dir)
    results = ROOT / "bench" / "results"
    results.mkdir(exist_ok=True)
    plots = [p for p in PLOTS if (run_dir / p).exists()]  # rows from before R@k have no recall_at_k.png
    for plot in plots:
        shutil.copy(run_dir / plot, results / f"{dataset}_{plot}")
    rows = read_rows(run_dir)
    summaries = summarize(rows)
    common = common_questions(rows)
    fair = []
    if common and len(common) < len(rows):
        shared = len({r["id"] for r in common})
        fair = [
            "",
            f"Methods have run on different numbers of questions; on the {shared} questions "
            "every method has answered (the plots use these):",
            "",
            markdown_table(summarize(common)),
        ]
    ran = [s.method for s in summaries]
    types: dict[str, int] = {}
    for r in rows:
        if r["method"] == ran[0]:
            types[r["type"]] = types.get(r["type"], 0) + 1
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    title = TITLES.get(dataset, dataset)
    body = "\n".join(
        [
            f"First {limit} questions of `../shared/eval/{dataset}/dev.jsonl` "
            f"({', '.join(f'{n} {t}' for t, n in sorted(types.items()))}), open retrieval over the "
            f"dataset's corpus, hybrid search, k=4, embedded SmolLM2-135M + MiniLM, one question at a "
            f"time; {machine}. `n` is the number of questions a method has run on."
            + f" DRAG and IterDRAG show {RagContext().num_demos} of the "
            f"{len(load_demonstrations('builtin'))} shipped demonstrations (`demonstrations=builtin`, "
            "mined from MuSiQue dev questions 100-194; `rag_graphs/data/README.md`).",
            f"Produced by `.venv/bin/python bench/methods.py --dataset {dataset} --limit {limit} "
            f"{' '.join(ran)}` (part of `make bench`); the same as "
            f"`rag-graphs eval --dataset ../shared/eval/{dataset} -m {','.join(ran)} --limit {limit}`.",
            "SP recall counts the gold passages among everything a method retrieved; R@2 / R@5 among "
            "the top 2 / 5 of its final context (`documents`, one ranking: multi-hop methods fuse their "
            "hops by reciprocal rank fusion), so with k=4 a method that retrieves once ranks at most 4.",
            "",
            markdown_table(summaries),
            *fair,
            "",
            " ".join(f"![{PLOTS[p]}](bench/results/{dataset}_{p})" for p in plots),
        ]
    )
    replace_section(dataset, body, heading=f"Methods on {title} (open retrieval)")
    print(markdown_table(summaries))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="hotpotqa", help="a folder under ../shared/eval")
    parser.add_argument("--limit", type=int, default=int(os.environ.get("BENCH_LIMIT", "30")))
    parser.add_argument(
        "--store",
        default=str(ROOT / ".rag-graphs" / "eval.db"),
        help="Milvus Lite path for the corpora (one process per path: give runs in parallel their own)",
    )
    parser.add_argument("--report-only", action="store_true", help="rewrite the section from stored rows")
    parser.add_argument("methods", nargs="*", help="default: every method (RAPTOR on RAPTOR_DATASETS only)")
    args = parser.parse_args()
    defaults = [m for m in GRAPHS_I + GRAPHS_II if m != "raptor" or args.dataset in RAPTOR_DATASETS]
    run(
        args.dataset,
        args.methods or defaults,
        args.limit,
        args.store,
        report_only=args.report_only,
    )


if __name__ == "__main__":
    main()
