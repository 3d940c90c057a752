"""The persistent search cache (``search_cache_path``) across processes: the first ``--limit``
dev questions of a dataset searched cold in one process, then again in a fresh process (empty
in-memory LRU) that reads the same cache file; reported: the rerun's hit rate and the seconds
its hits saved, and both wall times. Run the two phases as two processes:

    .venv/bin/python bench/persistent_cache.py --store /tmp/s2b_cache/graph_bench.db \\
        --cache /tmp/s2b_cache/search.sqlite --dataset musique   # cold: fills the file
    .venv/bin/python bench/persistent_cache.py --store ... --cache ... --dataset musique  # rerun

(delete the cache file first for a cold start). A store copy: Milvus Lite allows one process
per path.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

EVAL = Path(__file__).resolve().parent.parent.parent / "shared" / "eval"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--store", required=True)
    parser.add_argument("--cache", required=True, help="the persistent cache file")
    parser.add_argument("--dataset", default="musique")
    parser.add_argument("--limit", type=int, default=100)
    args = parser.parse_args()

    from rag_graphs.config.context import RagContext
    from rag_graphs.eval.corpus import open_corpus
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.search.disk_cache import disk_cache
    from rag_graphs.search.retrieval import retriever_for
    from rag_graphs.store import load_embeddings

    embeddings = load_embeddings("embedded")
    dataset = load_dataset(EVAL / args.dataset)
    index = open_corpus(dataset, args.store, embeddings, "embedded")
    files = {"search_cache_path": args.cache}
    ctx = RagContext(store_uri=args.store, collection=index.collection, embeddings=embeddings, k=5, **files)
    questions = [e.question for e in dataset.select(limit=args.limit)]
    retriever_for(ctx).invoke("warm-up: load the model and open the store")
    disk = disk_cache(args.cache)
    disk.hits = disk.misses = 0  # count the questions only
    disk.saved_seconds = 0.0
    start = time.perf_counter()
    for question in questions:
        retriever_for(ctx).invoke(question)
    took = time.perf_counter() - start
    stats = disk.stats()
    print(json.dumps({"dataset": args.dataset, "seconds": round(took, 2), **stats}))


if __name__ == "__main__":
    main()
