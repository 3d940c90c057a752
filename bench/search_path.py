"""p50 of the default search path: ``search(ctx, question)`` (plan, cache, graph search) over every
2Wiki hippocorpus dev question, each new to the cache.

Run it from two checkouts alternating (old, new, old, new) to compare them in one session:

    .venv/bin/python bench/search_path.py --store /work/stores/2wikimultihopqa_hippocorpus.db \
        --collection <the graph collection> --out new_1.json
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
DEV = Path(__file__).resolve().parents[2] / "shared" / "eval" / "2wikimultihopqa_hippocorpus" / "dev.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--collection", required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    from rag_graphs.config.context import RagContext
    from rag_graphs.search.retrieval import search

    questions = [json.loads(line)["question"] for line in DEV.read_text().splitlines() if line.strip()]
    ctx = RagContext(store_uri=args.store, collection=args.collection, k=5)
    for question in questions[:10]:
        search(ctx, question + " (warm-up)")
    ms = []
    for question in questions:
        start = time.perf_counter()
        search(ctx, question)
        ms.append((time.perf_counter() - start) * 1000)
    args.out.write_text(json.dumps(ms))
    ninety = sorted(ms)[int(0.9 * len(ms))]
    print(f"{os.getcwd()}: p50 {statistics.median(ms):.1f} ms, p90 {ninety:.1f} ms over {len(ms)} questions")


if __name__ == "__main__":
    main()
