"""Per-method benchmark on HotpotQA (open retrieval), regenerating BENCHMARKS.md's table.

Runs the methods on the first ``BENCH_LIMIT`` (default 30) questions of
``../shared/eval/hotpotqa/dev.jsonl`` with the embedded models, open retrieval
over its 9,809-passage corpus (indexed once into ``.rag-graphs/eval.db``).
Resumable: the run directory ``bench_runs/hotpotqa-open-<limit>`` keeps its
rows, so an interrupted ``make bench`` continues where it stopped. The table
and plots in BENCHMARKS.md are rewritten from the measured rows only.

Run: ``make bench`` or ``.venv/bin/python bench/hotpotqa.py [methods...]``.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
from pathlib import Path

from sections import replace_section

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT.parent / "shared" / "eval" / "hotpotqa"
METHODS = ["naive", "fixed_step", "iterative", "react", "ircot", "self_rag", "crag"]


def main(methods: list[str]) -> None:
    from rag_graphs.eval import evaluate, markdown_table, read_rows, summarize, write_report

    limit = int(os.environ.get("BENCH_LIMIT", "30"))
    run_dir = ROOT / "bench_runs" / f"hotpotqa-open-{limit}"
    evaluate(DATASET, methods, limit=limit, run_dir=run_dir, eval_store=str(ROOT / ".rag-graphs" / "eval.db"))
    write_report(run_dir)
    results = ROOT / "bench" / "results"
    results.mkdir(exist_ok=True)
    for plot in ("quality_vs_cost.png", "recall_by_group.png"):
        shutil.copy(run_dir / plot, results / f"hotpotqa_{plot}")
    rows = read_rows(run_dir)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    body = "\n".join(
        [
            f"First {limit} questions of `../shared/eval/hotpotqa/dev.jsonl` (all 2-hop; "
            f"{sum(1 for r in rows if r['type'] == 'bridge') // max(1, len({r['method'] for r in rows}))} "
            "bridge, the rest comparison), open retrieval over the 9,809-passage corpus, hybrid search, "
            f"k=4, embedded SmolLM2-135M + MiniLM, one question at a time; {machine}.",
            "Produced by `make bench` (`bench/hotpotqa.py`); the same as "
            f"`rag-graphs eval --dataset ../shared/eval/hotpotqa -m {','.join(methods)} --limit {limit}`.",
            "",
            markdown_table(summarize(rows)),
            "",
            "![quality vs cost](bench/results/hotpotqa_quality_vs_cost.png) "
            "![recall by type](bench/results/hotpotqa_recall_by_group.png)",
        ]
    )
    replace_section("hotpotqa", body, heading="Methods on HotpotQA (open retrieval)")
    print(markdown_table(summarize(rows)))


if __name__ == "__main__":
    main(sys.argv[1:] or METHODS)
