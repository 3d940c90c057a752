"""Graph search with its first dense search in process (``GraphSearchOptions.dense_in_process``)
against Milvus Lite's, in one process on one store, question by question (issue 47, round 4).

Milvus Lite indexes a flushed segment with faiss HNSW (approximate) and the in-process copy
(``rag_graphs.store.mirror``) searches exactly, so the two need not find the same first hits. This
measures what that changes: per dev-set half (``rag_graphs.eval.halves``), supporting-passage
R@2 / R@5 of graph search each way, the questions where the in-process way wins or loses at R@5,
how many get the same top-5 ids, and how often the 20 dense first hits differ (ids as a set, and
the first 5 in order). Times: each way's graph search p50 and its "search" lap (the wait for the
first searches); the arms alternate which goes first, question by question. The copy is read
once, before the timed questions (its reading time is printed).

    PYTHONPATH=. nice -n 10 .venv/bin/python bench/first_search.py --store bench_runs/fs.db \\
        --dataset hotpotqa --collection eval_hotpotqa_11905e43d9d50d41 --out bench_runs/fs.json

``--split tune|check`` keeps one half (before ``--limit``). On a store of several corpora (the
mixed store, ``--collection mixed_eval``) the gold ids are the dataset's own: a passage stored
once for two corpora counts under the first's id only, alike for both ways.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

EVAL = (
    Path("/work/shared/eval")
    if Path("/work/shared/eval").is_dir()
    else Path(__file__).resolve().parents[2] / "shared" / "eval"
)
DENSE_K = 20


def recall(ranked: list[str], gold: tuple[str, ...], k: int) -> float:
    return len(set(ranked[:k]) & set(gold)) / len(gold) if gold else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--store", required=True)
    parser.add_argument("--dataset", default="hotpotqa")
    parser.add_argument("--collection", required=True)
    parser.add_argument("--split", choices=["tune", "check", "all"], default="all", help="one half of dev")
    parser.add_argument("--limit", type=int, default=0, help="questions at most (0: every dev question)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    from rag_graphs.config.context import RagContext
    from rag_graphs.config.graph_search import GraphSearchOptions
    from rag_graphs.entity_graph.graph_search import graph_search
    from rag_graphs.entity_graph.rows import graph_state
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.eval.halves import half_of, split
    from rag_graphs.search.retrieval import index_for
    from rag_graphs.store.fields import DENSE_FIELD
    from rag_graphs.store.mirror import chunk_mirror
    from rag_graphs.store.reads import embed_queries

    dataset = load_dataset(EVAL / args.dataset)
    examples = split(dataset.examples, args.split)[: args.limit or None]
    index = index_for(RagContext(store_uri=args.store, collection=args.collection, embeddings="embedded"))
    ways = {"milvus": GraphSearchOptions(dense_in_process=False), "in_process": GraphSearchOptions()}
    start = time.perf_counter()
    mirror = chunk_mirror(index, graph_state(index))
    assert mirror is not None, "no in-process copy for this store"
    read_s = time.perf_counter() - start
    print(f"copy of {len(mirror.rows)} chunks read in {read_s:.1f} s", flush=True)
    for options in ways.values():  # warm up
        graph_search(index, examples[-1].question, k=5, options=options)
    runs: list[dict] = []
    for n, example in enumerate(examples):
        run: dict = {"id": example.id, "half": half_of(example.id)}
        order = list(ways) if n % 2 == 0 else list(reversed(ways))
        for name in order:
            begin = time.perf_counter()
            found = graph_search(index, example.question, k=5, options=ways[name])
            ms = (time.perf_counter() - begin) * 1000
            ranked = [str(d.id) for d, _ in found.hits]
            run[name] = {
                "ms": ms,
                "search_ms": found.milliseconds.get("search", 0.0),
                "top5": ranked,
                "R@2": recall(ranked, example.supporting_ids, 2),
                "R@5": recall(ranked, example.supporting_ids, 5),
            }
        vector = embed_queries(index.embeddings, [example.question])[0]
        hnsw = [
            str(d.id) for d, _ in index._scored(index._search_field(DENSE_FIELD, [vector], DENSE_K, None)[0])
        ]
        exact = [str(d.id) for d, _ in mirror.search(vector, DENSE_K)]
        run["dense_set_differs"] = set(hnsw) != set(exact)
        run["dense_top5_differs"] = hnsw[:5] != exact[:5]
        run["dense_gold_at_20"] = {
            "milvus": recall(hnsw, example.supporting_ids, DENSE_K),
            "in_process": recall(exact, example.supporting_ids, DENSE_K),
        }
        runs.append(run)
        if n % 100 == 99:
            print(f"{n + 1} questions", flush=True)
    report = {"copy_read_s": read_s, "chunks": len(mirror.rows), "halves": {}}
    for half in ("tune", "check", "all"):
        chosen = [r for r in runs if half == "all" or r["half"] == half]
        if not chosen:
            continue
        row: dict = {"questions": len(chosen)}
        for name in ways:
            row[name] = {
                "R@2": 100 * statistics.mean(r[name]["R@2"] for r in chosen),
                "R@5": 100 * statistics.mean(r[name]["R@5"] for r in chosen),
                "dense R@20": 100 * statistics.mean(r["dense_gold_at_20"][name] for r in chosen),
                "p50_ms": statistics.median(r[name]["ms"] for r in chosen),
                "search_lap_p50_ms": statistics.median(r[name]["search_ms"] for r in chosen),
            }
        row["R@5 won / lost (in_process vs milvus)"] = [
            sum(r["in_process"]["R@5"] > r["milvus"]["R@5"] for r in chosen),
            sum(r["in_process"]["R@5"] < r["milvus"]["R@5"] for r in chosen),
        ]
        row["same top-5 ids"] = sum(r["in_process"]["top5"] == r["milvus"]["top5"] for r in chosen)
        row["dense top-20 set differs"] = sum(r["dense_set_differs"] for r in chosen)
        row["dense top-5 differs"] = sum(r["dense_top5_differs"] for r in chosen)
        report["halves"][half] = row
    print(json.dumps(report, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps({"report": report, "runs": runs}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
