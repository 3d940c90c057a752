"""Where graph search's slow questions spend their time (issue 47, round 6): one process, one store,
the default path behind the search cache (every question a miss), each question's whole time, graph
search's laps and what is inside them, timed by wrapping the functions the search calls:

- ``state``: the search cache's read of the store state (``GraphSearcher.state``);
- ``embed_q``: the question's embedding; ``ner``: spaCy on the question;
- ``entity_reads``: entity rows read from Milvus on a row-cache miss (calls, keys, ms);
- ``embed_mentions`` / ``nearest``: the mentions no key matched, embedded and searched among the
  entity names (a Milvus vector search over every entity);
- ``gc``: the collector's pauses during the question (``gc.callbacks``);
- the neighbourhood's size (chunks, entities) and the question's mentions and seeds.

It prints the mean of each for the slowest ``--tail`` share of the questions against the rest, and
writes every question's record with ``--out``.

    cp -r /work/wt/mem1/bench_runs/mixed.db bench_runs/tail21.db
    PYTHONPATH=. nice -n 10 .venv/bin/python bench/graph_tail.py --store bench_runs/tail21.db \\
        --collection mixed_eval --questions-from hotpotqa musique 2wikimultihopqa_hippocorpus \\
        --questions 100 --out bench_runs/tail21.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from graph_latency import questions_of  # bench/ is this script's own directory on sys.path
from ingest_throughput import _Tree
from mixed_store import load_average

RECORD: dict = defaultdict(float)


def timed(owner, name: str, label: str, count=None) -> None:
    """Replace ``owner.name`` by a wrapper adding its milliseconds (and ``count(args)``) to RECORD."""
    inner = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            RECORD[label] += (time.perf_counter() - start) * 1000
            RECORD[f"{label}_calls"] += 1
            if count is not None:
                RECORD[f"{label}_n"] += count(args, kwargs)

    setattr(owner, name, wrapper)


def instrument() -> None:
    import rag_graphs.entity_graph.graph_search as searching
    import rag_graphs.entity_graph.linking as linking
    import rag_graphs.entity_graph.rows as rows
    from rag_graphs.search.searchers import GraphSearcher

    timed(GraphSearcher, "state", "state")
    import rag_graphs.entity_graph.first_search as first_search

    for module in (searching, first_search):  # where the question is embedded (moved in round 6)
        if hasattr(module, "embed_queries"):
            timed(module, "embed_queries", "embed_q")
    timed(linking, "embed_queries", "embed_mentions", lambda a, kw: len(a[1]))
    timed(linking, "nearest_entities", "nearest", lambda a, kw: len(a[1]))
    timed(rows, "entity_rows", "entity_reads", lambda a, kw: len(a[1]))
    extractor = linking.question_extractor()
    if extractor is not None:
        timed(type(extractor), "__call__", "ner")
    inner = searching.graph_search

    def graph_search(*args, **kwargs):
        found = inner(*args, **kwargs)
        RECORD.update({f"lap_{k}": v for k, v in found.milliseconds.items()})
        RECORD.update(chunks=found.chunks, entities=found.entities, seeds=len(found.seeds))
        RECORD["mentions"] = len(found.mentions)
        return found

    searching.graph_search = graph_search
    paused: dict = {}

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            paused["at"] = time.perf_counter()
        elif "at" in paused:
            RECORD["gc"] += (time.perf_counter() - paused.pop("at")) * 1000
            RECORD[f"gc{info['generation']}"] += 1

    gc.callbacks.append(on_gc)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--store", required=True)
    parser.add_argument("--collection", required=True)
    parser.add_argument("--questions-from", nargs="+", required=True)
    parser.add_argument("--questions", type=int, default=100, help="of each dev set")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tail", type=float, default=0.15, help="share of the slowest questions")
    parser.add_argument("--out", default=None)
    parser.add_argument("--code", default=None, help="import rag_graphs from this checkout")
    args = parser.parse_args()
    if args.code:
        import sys

        sys.meta_path.insert(0, _Tree(Path(args.code).resolve()))
    from rag_graphs.config.context import RagContext
    from rag_graphs.search.retrieval import search

    asked, warmup = questions_of(args.questions_from, args.questions, args.seed)
    ctx = RagContext(store_uri=args.store, collection=args.collection, embeddings="embedded")
    instrument()
    for question in warmup:
        search(ctx, question, k=5)
    load = [load_average()]
    records = []
    for question in asked:
        RECORD.clear()
        start = time.perf_counter()
        search(ctx, question, k=5)
        RECORD["ms"] = (time.perf_counter() - start) * 1000
        records.append({"question": question, **RECORD})
    load.append(load_average())
    records.sort(key=lambda r: -r["ms"])
    cut = max(int(len(records) * args.tail), 1)
    keys = sorted({k for r in records for k in r if k != "question"})
    print(f"load {load}; {len(records)} questions, the slowest {cut} against the rest (means; p50 of all)")
    print("| measure | slowest | rest | p50 all |\n|---|---|---|---|")
    for key in ["ms", *[k for k in keys if k != "ms"]]:
        values = [float(r.get(key, 0.0)) for r in records]
        slow, rest = statistics.mean(values[:cut]), statistics.mean(values[cut:])
        print(f"| {key} | {slow:.1f} | {rest:.1f} | {statistics.median(values):.1f} |")
    if args.out:
        Path(args.out).write_text(json.dumps({"load": load, "records": records}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
