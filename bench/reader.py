"""The extract reader against the generate reader (SmolLM2) on the dev check halves (issue 51).

Open retrieval over each dataset's corpus, the default search (``search_mode="auto"``: graph
search on a store with an entity graph), k=5, both readers in one evaluator run per dataset
(``EvalOptions.readers``), so retrieval is the same for both and only the answer differs. The
questions are the ``check`` half (``rag_graphs.eval.halves``; the reader's weights were fitted on
the ``tune`` half), the first ``--limit`` of it. Each dataset's store is its own file
(``--stores``/reader_<dataset>.db: Milvus Lite allows one process per file), indexed and given
its entity graph by the evaluator on first use.

Beside the evaluator's report (``<runs>/<dataset>/report.md``: EM / F1 / contains per method and
reader, by question type, cost), the extract reader is timed alone: for each extract row, its
final ``documents`` are read back from the store in ranking order and ``read`` is timed on them
(the run's own seconds include retrieval and graph orchestration).

Run (from the repository root; long: the generate reader runs SmolLM2 on every question):
    PYTHONPATH=. nice -n 10 .venv/bin/python bench/reader.py --methods naive --limit 60
    PYTHONPATH=. nice -n 10 .venv/bin/python bench/reader.py --methods iterative,hipporag --limit 30
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval"
DATASETS = ["2wikimultihopqa_hippocorpus", "musique", "hotpotqa"]


def reader_timing(run_dir: Path, store: str) -> dict:
    """Milliseconds ``read`` takes on each extract row's final documents (p50, mean, max)."""
    from rag_graphs.config.context import RagContext
    from rag_graphs.eval import read_rows
    from rag_graphs.eval.corpus import collection_name
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.eval.rows import read_config
    from rag_graphs.search.retrieval import embeddings_for
    from rag_graphs.store import open_index
    from rag_graphs.text.reader import read

    config = read_config(run_dir)
    ctx = RagContext()
    embeddings = embeddings_for(ctx)
    dataset = load_dataset(config["dataset"])
    index = open_index(store, collection_name(dataset, ctx.embeddings), embeddings)
    times = []
    for row in read_rows(run_dir):
        if row.get("reader") != "extract" or not row["retrieved_ids"]:
            continue
        by_id = {str(d.id): d for d in index.get(row["retrieved_ids"])}
        docs = [by_id[i] for i in row["retrieved_ids"] if i in by_id]
        start = time.perf_counter()
        read(row["question"], docs, embeddings=embeddings)
        times.append(1000 * (time.perf_counter() - start))
    if not times:
        return {}
    return {
        "n": len(times),
        "p50_ms": statistics.median(times),
        "mean_ms": statistics.mean(times),
        "max_ms": max(times),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument("--eval", type=Path, default=EVAL, help="the folder of the dev sets (../shared/eval)")
    parser.add_argument("--methods", default="naive", help="comma-separated methods")
    parser.add_argument("--readers", default="extract,generate")
    parser.add_argument("--split", default="check", choices=["tune", "check", "all"])
    parser.add_argument("--limit", type=int, default=60, help="the first N questions of the half")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument(
        "--stores", type=Path, default=ROOT / ".rag-graphs", help="folder of the per-dataset stores"
    )
    parser.add_argument("--runs", type=Path, default=ROOT / "bench_runs" / "reader")
    parser.add_argument(
        "--llm-cache",
        type=Path,
        help="SQLite file of LangChain's LLM cache: runs that send SmolLM2 (greedy) the same prompt, "
        "e.g. two readers or stop rules over the same first hop, compute its reply once "
        "(llm_calls still count it; seconds do not)",
    )
    args = parser.parse_args()
    if args.llm_cache:
        from langchain_community.cache import SQLiteCache
        from langchain_core.globals import set_llm_cache

        set_llm_cache(SQLiteCache(database_path=str(args.llm_cache)))

    from rag_graphs.config.context import RagContext
    from rag_graphs.eval import EvalOptions, evaluate, write_report
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.eval.halves import split

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    readers = tuple(r.strip() for r in args.readers.split(",") if r.strip())
    summary = {}
    for name in args.datasets:
        dataset = load_dataset(args.eval / name)
        dataset = dataclasses.replace(dataset, examples=split(dataset.examples, args.split)[: args.limit])
        store = str(args.stores / f"reader_{name}.db")
        run_dir = args.runs / f"{name}-{args.split}"  # later calls add methods and readers to it
        options = EvalOptions(readers=readers, eval_store=store, run_dir=run_dir)  # type: ignore[arg-type]
        evaluate(dataset, methods, context=RagContext(k=args.k), options=options)
        report = write_report(run_dir)
        timing = reader_timing(run_dir, store) if "extract" in readers else {}
        summary[name] = {"report": str(report), "questions": len(dataset.examples), "extract_timing": timing}
        print(report.read_text(), flush=True)
        print(f"{name}: extract reader alone: {json.dumps(timing)}", flush=True)
    (args.runs / "summary.json").write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
