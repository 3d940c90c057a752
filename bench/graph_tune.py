"""Tune graph search on one half of a dev set: a grid of ``GraphSearchOptions``, one process.

Every grid point is a ``GraphSearchOptions`` (``damping``, ``neighbourhood``, ``seeds``,
``link_threshold``, ``keep_first``, ``keep_in_top``, ``title_weight``; the rest at their
defaults). Choose on ``--split tune``; then run the chosen setting once on ``--split check``
(here or with ``bench/graph_retrieval.py``) and report both.

Run (after ``bench/graph_retrieval.py`` built the store and graph for the dataset):

    .venv/bin/python bench/graph_tune.py --dataset musique --split tune \\
        --grid damping=0.5,0.6,0.7 --grid title_weight=1,5
    .venv/bin/python bench/graph_tune.py --dataset musique --split check \
        --point '{}' --point '{"keep_first": 2, "keep_in_top": 0}'   # settings side by side

Prints one row per grid point: R@2 / R@5 of hybrid and graph, and per question how often graph
search is better / worse than hybrid at R@5 and R@2. "Hybrid" is one k=5 hybrid search per
question (what the ``naive`` method searches); the top 5 of the 20 first hits are printed beside it.

The question's first searches, its linking (extractor, embedding, entity look-ups) and its
neighbourhood reads depend on the question and the options that shape them, not on the walk's,
so they are memoised per question (``--no-cache`` turns that off): a grid over damping, the title
weight and hybrid's protection then costs one set of searches and store reads per question.
(Before issue 37 the first hits were passed in, ``graph_search(dense_hits=...)``; the knobs that
measured no gain, facts, fusion and passage nodes, left graph search and this grid.)
"""

from __future__ import annotations

import argparse
import itertools
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


def grid_points(grid: list[str], fixed: dict) -> list[dict]:
    """Every combination of the ``knob=v1,v2`` values, each merged over ``fixed``."""
    axes = []
    for item in grid:
        key, _, values = item.partition("=")
        axes.append([(key, json.loads(v) if v[:1] in "0123456789-[{tf" else v) for v in values.split(",")])
    return [{**fixed, **dict(combo)} for combo in itertools.product(*axes)] if axes else [dict(fixed)]


def _key(value):
    """A hashable, order-keeping form of plain data (lists of floats, dicts of rows, documents)."""
    if isinstance(value, dict):
        return tuple((k, _key(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_key(v) for v in value)
    if hasattr(value, "page_content"):
        return str(value.id)
    return value


def memoise_store_reads() -> None:
    """Memoise graph search's per-question linking and neighbourhood reads (see the docstring)."""
    import copy

    import rag_graphs.entity_graph.first_search as first_search
    import rag_graphs.entity_graph.graph_search as searching
    import rag_graphs.entity_graph.linking as linking

    def memo(function, key):
        cache: dict = {}

        def wrapper(*args, **kwargs):
            k = key(*args, **kwargs)
            if k not in cache:
                cache[k] = function(*args, **kwargs)
            return copy.deepcopy(cache[k])  # callers add seeds to what they get

        return wrapper

    first_search.search_first_hits = memo(
        first_search.search_first_hits, lambda index, query, vector, **kw: (query, _key(kw))
    )
    linking.named_seeds = memo(
        linking.named_seeds, lambda index, q, mentions, rows=None: (q, tuple(mentions))
    )
    linking.embed_queries = memo(linking.embed_queries, lambda embeddings, queries: tuple(queries))
    searching.embed_queries = memo(searching.embed_queries, lambda embeddings, queries: tuple(queries))
    linking.nearest_entities = memo(linking.nearest_entities, lambda index, *args: _key(args))
    searching.fetch_neighbourhood = memo(
        searching.fetch_neighbourhood,
        lambda index, seeds, hits, rows=None, **kw: (
            tuple(seeds),
            tuple(str(d.id) for d, _ in hits),
            _key(kw),
        ),
    )
    extractor = linking.question_extractor()
    if extractor is not None:
        cached = memo(extractor, lambda texts: tuple(texts))
        linking.question_extractor = lambda: cached  # type: ignore[assignment]


def score(ranked: list[str], gold: tuple[str, ...]) -> tuple[float, float]:
    def at(k: int) -> float:
        return len(set(ranked[:k]) & set(gold)) / len(gold) if gold else 0.0

    return at(2), at(5)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--split", default="tune", choices=["tune", "check", "all"])
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--store", default=str(ROOT / ".rag-graphs" / "graph_bench.db"))
    parser.add_argument("--variant", default="ner_title")
    parser.add_argument("--grid", action="append", default=[], help="knob=v1,v2,... (one axis)")
    parser.add_argument("--set", dest="fixed", action="append", default=[], help="knob=value for every point")
    parser.add_argument(
        "--point",
        action="append",
        default=[],
        help='one more setting, JSON: {"keep_first": 1} (merged over --set)',
    )
    parser.add_argument("--out", default=None, help="append the rows as JSON lines to this file")
    parser.add_argument(
        "--no-cache", action="store_true", help="do not memoise linking and neighbourhood reads"
    )
    args = parser.parse_args()

    from graph_retrieval import parse_knobs  # bench/ is this script's own directory on sys.path

    from rag_graphs.config.graph_search import GraphSearchOptions
    from rag_graphs.entity_graph.graph_search import DENSE_K, graph_search
    from rag_graphs.eval.corpus import collection_name
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.eval.halves import split
    from rag_graphs.store import load_embeddings, open_index

    if not args.no_cache:
        memoise_store_reads()
    embeddings = load_embeddings("embedded")
    dataset = load_dataset(EVAL / args.dataset)
    examples = split(dataset.examples, args.split)[: args.limit]
    name = f"{collection_name(dataset, 'embedded')}_{args.variant}"
    graph = open_index(args.store, name, embeddings)
    top20 = {
        e.id: score([str(d.id) for d, _ in graph.search(e.question, k=DENSE_K)], e.supporting_ids)
        for e in examples
    }
    hybrid = {
        e.id: score([str(d.id) for d, _ in graph.search(e.question, k=5, mode="hybrid")], e.supporting_ids)
        for e in examples
    }
    base2 = 100 * statistics.mean(h[0] for h in hybrid.values())
    base5 = 100 * statistics.mean(h[1] for h in hybrid.values())
    print(
        f"{args.dataset} {args.split}: {len(examples)} questions; "
        f"hybrid (k=5) R@2 {base2:.1f} R@5 {base5:.1f}; "
        f"top 5 of 20 hybrid hits R@2 {100 * statistics.mean(h[0] for h in top20.values()):.1f} "
        f"R@5 {100 * statistics.mean(h[1] for h in top20.values()):.1f}"
    )
    print("| knobs | graph R@2 | graph R@5 | R@5 better / worse | R@2 better / worse | ms |")
    print("|---|---|---|---|---|---|")
    fixed = parse_knobs(args.fixed)
    points = (grid_points(args.grid, fixed) if args.grid or not args.point else []) + [
        {**fixed, **json.loads(p)} for p in args.point
    ]
    for knobs in points:
        options = GraphSearchOptions(**knobs)  # an option that left graph search is refused here
        got, ms = {}, []
        for e in examples:
            start = time.perf_counter()
            found = graph_search(graph, e.question, k=5, options=options)
            ms.append((time.perf_counter() - start) * 1000)
            got[e.id] = score([str(d.id) for d, _ in found.hits], e.supporting_ids)
        r2 = 100 * statistics.mean(g[0] for g in got.values())
        r5 = 100 * statistics.mean(g[1] for g in got.values())
        wins = [sum(got[q][i] > hybrid[q][i] for q in got) for i in (0, 1)]
        losses = [sum(got[q][i] < hybrid[q][i] for q in got) for i in (0, 1)]
        print(
            f"| {json.dumps(knobs)} | {r2:.1f} | {r5:.1f} | {wins[1]} / {losses[1]} "
            f"| {wins[0]} / {losses[0]} "
            f"| {statistics.median(ms):.0f} |",
            flush=True,
        )
        if args.out:
            row = {
                "dataset": args.dataset,
                "split": args.split,
                "questions": len(examples),
                "knobs": knobs,
                "hybrid": [base2, base5],
                "graph": [r2, r5],
                "r5_better_worse": [wins[1], losses[1]],
                "r2_better_worse": [wins[0], losses[0]],
            }
            with open(args.out, "a") as fh:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
