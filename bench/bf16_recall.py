"""Graph search on one store with float32 and with bf16 query vectors (issue 47, round 2: bf16).

The store was written however it was (the evaluator's reader stores: float32); what changes is
how the question and its mentions are embedded (``RAG_GRAPHS_EMBED_BF16``, read when the model
loads, so each precision runs in a process of its own: ``off`` first, then ``auto``). Per
question of the chosen half: graph search's top 5 (default options), supporting-passage R@2 and
R@5; then R@2 / R@5 per precision, the questions where bf16 wins or loses at R@2 and at R@5, and
how many get the same top-5 ids in the same order.

    PYTHONPATH=. nice -n 10 .venv/bin/python bench/bf16_recall.py --dataset musique \\
        --store bench_runs/stores/reader_musique.db --split check --out bench_runs/bf16_musique.json

``--build`` only writes a new store at ``--store`` as the evaluator does (the dataset's passages
by ``open_corpus``, then ``build_graph`` with spaCy), embedding with this machine's default
precision (``auto``: bf16 where native), and prints how long each took: a store made wholly in
bf16. Run the command again without it to compare on that store (Milvus Lite lets one process
open a store, so the build does not run in the comparing process).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

EVAL = (
    Path("/work/shared/eval")
    if Path("/work/shared/eval").is_dir()
    else Path(__file__).resolve().parents[2] / "shared" / "eval"
)


def recall(ranked: list[str], gold: tuple[str, ...], k: int) -> float:
    return len(set(ranked[:k]) & set(gold)) / len(gold) if gold else 0.0


def build(args: argparse.Namespace) -> None:
    """A new store of the dataset's passages and its entity graph, as the evaluator builds them."""
    import time

    from rag_graphs.entity_graph.build import build_graph
    from rag_graphs.entity_graph.entities import load_extractor
    from rag_graphs.eval.corpus import open_corpus
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.store import load_embeddings

    if Path(args.store).exists():
        raise SystemExit(f"{args.store} exists: --build writes a new store")
    model = load_embeddings("embedded")
    start = time.perf_counter()
    index = open_corpus(load_dataset(EVAL / args.dataset), args.store, model, "embedded")
    stored = time.perf_counter() - start
    summary = build_graph(index, load_extractor("spacy"), progress=False).summary()
    print(
        f"built {args.store} (bf16: {getattr(model, 'bf16', False)}): {index.count()} chunks "
        f"in {stored:.0f} s, "
        f"graph in {time.perf_counter() - start - stored:.0f} s: {summary}; load {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def worker(args: argparse.Namespace) -> None:
    """One precision: every question's top 5 and recalls, as one JSON line on stdout."""
    from rag_graphs.config.graph_search import GraphSearchOptions
    from rag_graphs.entity_graph.graph_search import graph_search
    from rag_graphs.eval.corpus import collection_name
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.eval.halves import split
    from rag_graphs.store import load_embeddings, open_index

    dataset = load_dataset(EVAL / args.dataset)
    model = load_embeddings("embedded")
    index = open_index(args.store, args.collection or collection_name(dataset, "embedded"), model)
    examples = split(dataset.examples, args.split)[: args.limit or None]
    options = GraphSearchOptions()
    graph_search(index, examples[0].question, k=5, options=options)  # warm up
    rows = {}
    for e in examples:
        ranked = [str(d.id) for d, _ in graph_search(index, e.question, k=5, options=options).hits]
        rows[e.id] = {
            "top5": ranked,
            "R@2": recall(ranked, e.supporting_ids, 2),
            "R@5": recall(ranked, e.supporting_ids, 5),
        }
    print(json.dumps({"bf16": bool(getattr(model, "bf16", False)), "rows": rows}))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--store", required=True)
    parser.add_argument("--collection", default=None)
    parser.add_argument("--split", choices=["tune", "check", "all"], default="check")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--out", default=None)
    parser.add_argument("--build", action="store_true", help="write the store first (see above)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    if args.build:
        build(args)
        return
    runs = {}
    for setting in ("off", "auto"):
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", *sys.argv[1:]]
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "RAG_GRAPHS_EMBED_BF16": setting},
        )
        if done.returncode:
            raise SystemExit(f"{setting} failed:\n{done.stderr[-4000:]}")
        runs[setting] = json.loads(done.stdout.strip().splitlines()[-1])
    off, auto = runs["off"]["rows"], runs["auto"]["rows"]
    report: dict = {"dataset": args.dataset, "split": args.split, "questions": len(off)}
    report["bf16 used"] = {s: runs[s]["bf16"] for s in runs}
    for s, rows in (("fp32", off), ("bf16", auto)):
        report[s] = {m: round(100 * statistics.mean(r[m] for r in rows.values()), 2) for m in ("R@2", "R@5")}
    for m in ("R@2", "R@5"):
        report[f"{m} won / lost by bf16"] = [
            sum(auto[q][m] > off[q][m] for q in off),
            sum(auto[q][m] < off[q][m] for q in off),
        ]
    report["same top-5 (order)"] = sum(auto[q]["top5"] == off[q]["top5"] for q in off)
    report["same top-5 (set)"] = sum(set(auto[q]["top5"]) == set(off[q]["top5"]) for q in off)
    print(json.dumps(report))
    if args.out:
        Path(args.out).write_text(json.dumps({"report": report, "runs": runs}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
