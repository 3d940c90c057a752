"""Graph search with its first searches in process (issue 47, rounds 4 and 5) against the same
search with BM25 and the chunk reads in Milvus Lite, in one process on one store, question by
question.

Round 5's ways: ``milvus_bm25`` is round 4's default (the dense search over the in-process copy,
``rag_graphs.store.mirror``; BM25, the learned ranker's pool read and the final fetch in Milvus
Lite) and ``in_process``, the default since round 5 (BM25 over the copy too, ``rag_graphs.store.bm25``,
with the live rows' statistics where Milvus Lite takes them per segment, superseded rows included;
the pool read and the fetch from the copy). Per dev-set half (``rag_graphs.eval.halves``): supporting-passage
R@2 / R@5 each way, the questions the in-process way wins or loses at R@2 and R@5, how many get
the same top-5 ids, how often BM25's 20 first hits differ (as a set, and the first 5 in order)
and their gold R@20 each way; and, on every question, whether the pool read from the copy gave the
learned ranker exactly the cosines and texts Milvus's read gives (``pool_reads_differ``: must be 0).
Times: each way's graph search p50 and its "search" lap; the ways alternate which goes first,
question by question. The copy is read once, before the timed questions.

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
    from rag_graphs.entity_graph import candidates
    from rag_graphs.entity_graph import graph_search as search_module
    from rag_graphs.entity_graph.graph_search import graph_search
    from rag_graphs.entity_graph.rows import graph_state
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.eval.halves import half_of, split
    from rag_graphs.search.retrieval import index_for
    from rag_graphs.store.fields import SPARSE_FIELD
    from rag_graphs.store.keywords import keyword_query
    from rag_graphs.store.mirror import ChunkMirror, chunk_mirror

    dataset = load_dataset(EVAL / args.dataset)
    examples = split(dataset.examples, args.split)[: args.limit or None]
    index = index_for(RagContext(store_uri=args.store, collection=args.collection, embeddings="embedded"))
    ways = ("milvus_bm25", "in_process")
    options = GraphSearchOptions()
    start = time.perf_counter()
    mirror = chunk_mirror(index, graph_state(index))
    assert mirror is not None and mirror.keywords is not None, "no in-process copy with BM25 for this store"
    read_s = time.perf_counter() - start
    print(f"copy of {len(mirror.rows)} chunks read (BM25 weights built) in {read_s:.1f} s", flush=True)

    real_keyword_search, real_read_pool, real_documents_of = (
        ChunkMirror.keyword_search,
        candidates.read_pool,
        search_module.documents_of,
    )
    pool_differs: list[bool] = []

    def checked_read_pool(index, pool, vector, expr, copy=None):  # type: ignore[no-untyped-def]
        """The copy's pool read, checked against Milvus's on the same ids."""
        ours = real_read_pool(index, pool, vector, expr, copy)
        if copy is not None:
            pool_differs.append(ours != real_read_pool(index, pool, vector, expr, None))
        return ours

    def way(name: str) -> None:
        """Round 4's way (BM25, the pool read and the fetch in Milvus) or today's."""
        old = name == "milvus_bm25"
        ChunkMirror.keyword_search = (lambda self, q, k: None) if old else real_keyword_search  # type: ignore[method-assign]
        candidates.read_pool = (  # type: ignore[assignment]
            (lambda index, pool, vector, expr, copy=None: real_read_pool(index, pool, vector, expr, None))
            if old
            else checked_read_pool
        )
        search_module.documents_of = (  # type: ignore[assignment]
            (lambda index, ranked, known, copy=None: real_documents_of(index, ranked, known, None))
            if old
            else real_documents_of
        )

    import rag_graphs.entity_graph.learned_rank as learned_rank

    learned_rank.read_pool = lambda *a: candidates.read_pool(*a)  # type: ignore[assignment]
    for name in ways:  # warm up
        way(name)
        graph_search(index, examples[-1].question, k=5, options=options)
    runs: list[dict] = []
    for n, example in enumerate(examples):
        run: dict = {"id": example.id, "half": half_of(example.id)}
        order = list(ways) if n % 2 == 0 else list(reversed(ways))
        for name in order:
            way(name)
            begin = time.perf_counter()
            found = graph_search(index, example.question, k=5, options=options)
            ms = (time.perf_counter() - begin) * 1000
            ranked = [str(d.id) for d, _ in found.hits]
            run[name] = {
                "ms": ms,
                "search_ms": found.milliseconds.get("search", 0.0),
                "rank_ms": found.milliseconds.get("rank", 0.0),
                "top5": ranked,
                "R@2": recall(ranked, example.supporting_ids, 2),
                "R@5": recall(ranked, example.supporting_ids, 5),
            }
        keywords = keyword_query(example.question, index.bm25_stop_words)
        theirs = [
            str(d.id)
            for d, _ in index._scored(index._search_field(SPARSE_FIELD, [keywords], DENSE_K, None)[0])
        ]
        ours = [str(d.id) for d, _ in real_keyword_search(mirror, keywords, DENSE_K) or []]
        run["bm25_set_differs"] = set(theirs) != set(ours)
        run["bm25_top5_differs"] = theirs[:5] != ours[:5]
        run["bm25_gold_at_20"] = {
            "milvus_bm25": recall(theirs, example.supporting_ids, DENSE_K),
            "in_process": recall(ours, example.supporting_ids, DENSE_K),
        }
        run["pool_reads_differ"] = sum(pool_differs)
        pool_differs.clear()
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
                "bm25 R@20": 100 * statistics.mean(r["bm25_gold_at_20"][name] for r in chosen),
                "p50_ms": statistics.median(r[name]["ms"] for r in chosen),
                "search_lap_p50_ms": statistics.median(r[name]["search_ms"] for r in chosen),
                "rank_lap_p50_ms": statistics.median(r[name]["rank_ms"] for r in chosen),
            }
        for at in ("R@2", "R@5"):
            row[f"{at} won / lost (in_process vs milvus_bm25)"] = [
                sum(r["in_process"][at] > r["milvus_bm25"][at] for r in chosen),
                sum(r["in_process"][at] < r["milvus_bm25"][at] for r in chosen),
            ]
        row["same top-5 ids"] = sum(r["in_process"]["top5"] == r["milvus_bm25"]["top5"] for r in chosen)
        row["bm25 top-20 set differs"] = sum(r["bm25_set_differs"] for r in chosen)
        row["bm25 top-5 differs"] = sum(r["bm25_top5_differs"] for r in chosen)
        row["pool reads that differ"] = sum(r["pool_reads_differ"] for r in chosen)
        report["halves"][half] = row
    print(json.dumps(report, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps({"report": report, "runs": runs}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
