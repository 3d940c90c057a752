"""Issue 46's real-data row: naive, hipporag, ircot and iterative over 2WikiMultihopQA dev, answered
by the extract reader (no LLM call for the answer), on the first N questions of each fixed half.

One run gives both of the issue's router fits: R@5 against searches or seconds (retrieval), and EM
against LLM calls (the extract reader's answer costs none, so the calls are ircot's and iterative's
retrieval loops). The questions alternate tune, check, tune... so a run stopped early keeps both
halves the same size; ``--per-half`` bounds the cost (SmolLM2 takes ~15-20 s a call on this loaded
machine, two to three calls per ircot or iterative question).

Run (then ``rag-graphs eval --report RUN --fit-router ... --half tune``, see BENCHMARKS.md):
``nice -n 10 .venv/bin/python bench/router_methods.py --per-half 22 --store bench_runs/method_choice_eval.db``
With ``RAG_GRAPHS_ROUTER_FILE=router.json``, ``--methods hipporag,auto --half check`` runs the fitted
router for real, interleaved with the method it is measured against (seconds compare within a run).
"""

from __future__ import annotations

import argparse
import dataclasses
from itertools import chain, zip_longest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval"
METHODS = "naive,hipporag,ircot,iterative"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=EVAL / "2wikimultihopqa")
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--per-half", type=int, help="the first N questions of each half [all]")
    parser.add_argument(
        "--half", choices=("both", "tune", "check"), default="both", help="one half only (e.g. auto on check)"
    )
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--search-mode", default="hybrid", help="every method's search (hipporag: graph)")
    parser.add_argument("--store", default=str(ROOT / "bench_runs" / "method_choice_eval.db"))
    parser.add_argument(
        "--run", type=Path, default=ROOT / "bench_runs" / "2wiki-route", help="resumed if it exists"
    )
    args = parser.parse_args()

    from rag_graphs.config.context import RagContext
    from rag_graphs.eval import EvalOptions, evaluate, write_report
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.eval.halves import split

    dataset = load_dataset(args.dataset)
    tune, check = (
        split(dataset.examples, h)[: args.per_half] if args.half in ("both", h) else []
        for h in ("tune", "check")
    )
    alternating = [e for e in chain.from_iterable(zip_longest(tune, check)) if e is not None]
    dataset = dataclasses.replace(dataset, examples=alternating)
    options = EvalOptions(readers=("extract",), eval_store=args.store, run_dir=args.run)
    # no search cache: the methods run the same question one after another, and one whose search
    # is another's (auto's routed method, ircot's first search and naive's) would get it free
    context = RagContext(k=args.k, search_mode=args.search_mode, search_cache=0)
    evaluate(dataset, [m.strip() for m in args.methods.split(",")], context=context, options=options)
    print(write_report(args.run).read_text(), flush=True)


if __name__ == "__main__":
    main()
