"""Graph search latency, old code against new, alternating question by question (issue 47).

Two worker processes, each on its own copy of one store (Milvus Lite serves a store to one
process): ``old`` imports ``rag_graphs`` from another checkout (``--old DIR``, e.g. a clone of
main), ``new`` from this tree. Each searches the way a question on the default path does,
``rag_graphs.search.retrieval.search(RagContext(...), question, k=5)``: the search plan, the
search cache (``CachedSearcher``: its state read, its key; every question distinct, so every
search is a miss) and graph search with the default ``GraphSearchOptions``; after the warm-up each
waits for the reads its warm-up started in the background (the entity name vectors). The driver sends each
question to both, the old first on even questions and the new first on odd ones (so load and
a question's first, cold reads hit the arms alike), and never to both at once.

Per question and arm it keeps the whole search's milliseconds, graph search's laps
(``GraphHits.milliseconds``) and the top-5 ids and scores, and prints p50 / p90, the laps' p50s
and how many questions got the same top-5 ids (and scores) from both. The new arm also reports its
row cache (``entity_graph.rows.GraphRows``): rows held and their size in MB, and with ``--fill``
what the whole store's rows take (every entity and chunk row read through it after the run).

    git clone -q /work/main /tmp/lat_old
    cp -r STORE.db bench_runs/lat_old.db; cp -r STORE.db bench_runs/lat_new.db
    PYTHONPATH=. nice -n 10 .venv/bin/python bench/graph_latency.py --old /tmp/lat_old \\
        --stores bench_runs/lat_old.db bench_runs/lat_new.db --dataset hotpotqa --questions 200

``--collection`` names the collection (default: the evaluator's name for ``--dataset``'s corpus,
embedded); ``--questions-from DATASET ...`` takes the questions from several dev sets (a mixed
store), ``--questions`` of each, seeded.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from ingest_throughput import EVAL, _Tree  # bench/ is this script's own directory on sys.path
from mixed_store import load_average, percentile

ROOT = Path(__file__).resolve().parents[1]
WARMUP = 5
"""Questions each worker answers before the timed ones (models and first reads warmed)."""
REPLY = "@@"
"""A worker's answer lines start with it (anything else on its stdout is a library's noise)."""


# -- a worker ---------------------------------------------------------------------------------
def worker(args) -> None:
    if args.old:
        sys.meta_path.insert(0, _Tree(Path(args.old).resolve()))
    import rag_graphs
    import rag_graphs.entity_graph.graph_search as searching
    from rag_graphs.config.context import RagContext
    from rag_graphs.search.retrieval import search

    laps: dict = {}
    inner = searching.graph_search

    def timed(*a, **kw):
        found = inner(*a, **kw)
        laps.clear()
        laps.update(found.milliseconds)
        return found

    searching.graph_search = timed  # GraphSearcher imports it at each search
    ctx = RagContext(store_uri=args.store, collection=args.collection, embeddings="embedded")
    print(f"{REPLY}{json.dumps({'ready': str(Path(rag_graphs.__file__).parent)})}", flush=True)
    for line in sys.stdin:
        asked = json.loads(line)
        if asked.get("settle"):  # after the warm-up: reads started in the background have ended
            print(f"{REPLY}{json.dumps({'settled': settle()})}", flush=True)
            continue
        if "question" not in asked:
            report = cache_report()
            if asked.get("fill"):
                report["filled"] = fill_cache(ctx)
            print(f"{REPLY}{json.dumps(report)}", flush=True)
            continue
        laps.clear()
        start = time.perf_counter()
        docs = search(ctx, asked["question"], k=5)
        ms = (time.perf_counter() - start) * 1000
        hits = [[str(d.id), d.metadata.get("score")] for d in docs]
        print(f"{REPLY}{json.dumps({'ms': ms, 'laps': dict(laps), 'hits': hits})}", flush=True)


def settle() -> float:
    """Wait for the background reads the warm-up started (the entity name vectors,
    ``entity_graph.name_search``; code without them has none); return the seconds waited."""
    start = time.perf_counter()
    try:
        from rag_graphs.entity_graph.name_search import wait_for_reads
    except ImportError:
        return 0.0
    wait_for_reads()
    return time.perf_counter() - start


def cache_report() -> dict:
    """The new arm's row caches: rows held (entity rows, chunk rows; None is a key the store
    lacks) and their deep size in MB (the old code has none)."""
    try:
        from rag_graphs.entity_graph import rows
    except ImportError:
        return {}
    caches = getattr(rows, "_CACHES", None)
    if caches is None:
        return {}
    report = {}
    for (_, collection), cache in caches.items():
        report[collection] = {
            "entity_rows": sum(v is not None for v in cache.entities.values()),
            "entity_keys_absent": sum(v is None for v in cache.entities.values()),
            "chunk_rows": sum(v is not None for v in cache.chunks.values()),
            "mb": round((deep_size(cache.entities) + deep_size(cache.chunks)) / 1e6, 1),
        }
    return report


def fill_cache(ctx) -> dict:
    """Every entity row and chunk row of the store read through the row cache, then its report:
    what the whole store costs in memory."""
    from rag_graphs.entity_graph.rows import CHUNK_ROW_FIELDS, ENTITY_ROW_FIELDS, entity_table, graph_rows
    from rag_graphs.search.retrieval import index_for
    from rag_graphs.store.fields import PRIMARY_FIELD

    index = index_for(ctx)
    rows = graph_rows(index)
    for table, read in ((entity_table(index), rows.entities), (index.chunks, None)):
        for batch in table.iterate([PRIMARY_FIELD], batch_size=5000):
            keys = [r[PRIMARY_FIELD] for r in batch]
            if read is not None:
                read(keys, list(ENTITY_ROW_FIELDS))
            else:
                rows.chunks(keys, list(CHUNK_ROW_FIELDS), None)
    return {**cache_report(), "passages": index.count()}


def deep_size(value, seen: set | None = None) -> int:
    """Bytes of ``value`` and everything it holds (dicts, lists, tuples, sets, strings, numbers),
    each object once."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        size += sum(deep_size(k, seen) + deep_size(v, seen) for k, v in value.items())
    elif isinstance(value, list | tuple | set | frozenset):
        size += sum(deep_size(v, seen) for v in value)
    return size


# -- the driver -------------------------------------------------------------------------------
class Worker:
    def __init__(self, name: str, store: str, collection: str, old: str | None) -> None:
        command = [sys.executable, __file__, "--worker", "--store", store, "--collection", collection]
        self.name = name
        self.process = subprocess.Popen(
            command + (["--old", old] if old else []),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        print(f"{name}: {self.read()['ready']}", flush=True)

    def read(self) -> dict:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith(REPLY):
                return json.loads(line[len(REPLY) :])
        raise SystemExit(f"worker {self.name} ended (exit {self.process.wait()})")

    def ask(self, message: dict) -> dict:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        return self.read()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def questions_of(datasets: list[str], count: int, seed: int) -> tuple[list[str], list[str]]:
    """``count`` distinct questions of each dataset's dev set (the first ones, or seeded samples
    for several) and ``WARMUP`` others."""
    asked: list[str] = []
    rest: list[str] = []
    for name in datasets:
        lines = (EVAL / name / "dev.jsonl").read_text(encoding="utf-8").splitlines()
        texts = list(dict.fromkeys(json.loads(line)["question"] for line in lines))
        if len(datasets) > 1:
            random.Random(seed).shuffle(texts)
        asked += texts[:count]
        rest += texts[count:]
    return asked, rest[-WARMUP:]


def summary(runs: list[dict]) -> dict:
    ms = [r["ms"] for r in runs]
    names = list(dict.fromkeys(name for r in runs for name in r["laps"]))
    return {
        "p50": statistics.median(ms),
        "p90": percentile(ms, 90),
        "mean": statistics.mean(ms),
        "laps_p50": {n: statistics.median(r["laps"].get(n, 0.0) for r in runs) for n in names},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    parser.add_argument("--old", default=None, help="a checkout of the old code")
    parser.add_argument("--stores", nargs=2, metavar=("OLD", "NEW"), help="two copies of one store")
    parser.add_argument("--dataset", default="hotpotqa", help="the store's corpus")
    parser.add_argument("--collection", default=None)
    parser.add_argument("--questions-from", nargs="+", default=None, help="default: --dataset")
    parser.add_argument("--questions", type=int, default=200, help="questions (of each dev set)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fill", action="store_true", help="then read the whole store through the cache")
    parser.add_argument("--out", default=None, help="write every run and the summary here (JSON)")
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    if not args.old or not args.stores:
        parser.error("--old and --stores are required")
    collection = args.collection
    if collection is None:
        from rag_graphs.eval.corpus import collection_name
        from rag_graphs.eval.datasets import load_dataset

        collection = collection_name(load_dataset(EVAL / args.dataset), "embedded")
    asked, warmup = questions_of(args.questions_from or [args.dataset], args.questions, args.seed)
    arms = {
        "old": Worker("old", args.stores[0], collection, args.old),
        "new": Worker("new", args.stores[1], collection, None),
    }
    for question in warmup:
        for arm in arms.values():
            arm.ask({"question": question})
    for name, arm in arms.items():
        waited = arm.ask({"settle": True})["settled"]
        print(f"{name}: background reads ended after {waited:.1f} s", flush=True)
    load = [load_average()]
    runs: dict[str, list[dict]] = {name: [] for name in arms}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    for n, question in enumerate(asked):
        for name in ("old", "new") if n % 2 == 0 else ("new", "old"):
            runs[name].append(arms[name].ask({"question": question}))
        if n % 50 == 49:
            load.append(load_average())
            print(f"{n + 1} questions, load {load[-1]}", flush=True)
    load.append(load_average())
    caches = arms["new"].ask({"fill": args.fill})
    for arm in arms.values():
        arm.close()
    pairs = list(zip(runs["old"], runs["new"], strict=True))
    same_ids = sum([h[0] for h in a["hits"]] == [h[0] for h in b["hits"]] for a, b in pairs)
    same_scores = sum(a["hits"] == b["hits"] for a, b in pairs)
    result = {
        "started": started,
        "collection": collection,
        "questions": len(asked),
        "load": load,
        "old": summary(runs["old"]),
        "new": summary(runs["new"]),
        "new_first_20": summary(runs["new"][:20]),
        "old_first_20": summary(runs["old"][:20]),
        "same_top5_ids": same_ids,
        "same_top5_ids_and_scores": same_scores,
        "new_row_cache": caches,
    }
    print(json.dumps(result, indent=1))
    print("| arm | p50 / p90 ms | laps p50 (ms) |\n|---|---|---|")
    for name in arms:
        s = result[name]
        lap = " / ".join(f"{k} {v:.1f}" for k, v in s["laps_p50"].items())
        print(f"| {name} | {s['p50']:.0f} / {s['p90']:.0f} | {lap} |")
    print(f"same top-5 ids: {same_ids} / {len(asked)}; ids and scores: {same_scores} / {len(asked)}")
    if args.out:
        Path(args.out).write_text(json.dumps({**result, "runs": runs}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
