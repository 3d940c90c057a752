"""Small-to-big retrieval (``search_unit=sentence``) against plain chunk search, in one run.

For each dataset under ``../shared/eval`` (read in place), the corpus collection the evaluator
builds (``rag_graphs.eval.corpus.open_corpus``) gets its sentence rows
(``rag_graphs.store.sentences.build_sentences``: resumable, so a killed build continues), then
the first
``--limit`` dev questions are searched through ``retriever_for`` (the retrieve node's own search)
with ``search_unit=chunk`` and ``search_unit=sentence``, search cache off. Reported: supporting-
passage R@5 (gold = ``supporting_ids``), R@2, mean characters of the top 5, ms per question.

Run (on a copy of a store that holds the corpora; Milvus Lite allows one process per path):
    taskset -c 0 nice .venv/bin/python bench/small_to_big.py --store /tmp/s2b/graph_bench.db \\
        --datasets musique hotpotqa --limit 100
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

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval"


def recall(ranked: list[str], gold: tuple[str, ...], k: int) -> float:
    return len(set(ranked[:k]) & set(gold)) / len(gold) if gold else 0.0


def measure(base: dict, unit: str, examples) -> dict:
    from rag_graphs.config.context import RagContext
    from rag_graphs.search.retrieval import retriever_for

    ctx = RagContext(**base, search_unit=unit, search_cache=0)
    r5, r2, chars, ms = [], [], [], []
    for example in examples:
        start = time.perf_counter()
        docs = retriever_for(ctx).invoke(example.question)
        ms.append((time.perf_counter() - start) * 1000)
        ids = [str(d.id) for d in docs]
        r5.append(recall(ids, example.supporting_ids, 5))
        r2.append(recall(ids, example.supporting_ids, 2))
        chars.append(sum(len(d.page_content) for d in docs[:5]))
    return {
        "R@5": 100 * statistics.mean(r5),
        "R@2": 100 * statistics.mean(r2),
        "chars": statistics.mean(chars),
        "ms": statistics.mean(ms),
    }


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--store", required=True, help="a copy of a Milvus Lite store holding the corpora")
    parser.add_argument("--datasets", nargs="+", default=["musique", "hotpotqa"])
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--mode", default="hybrid", choices=["dense", "hybrid"])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "small_to_big.json")
    args = parser.parse_args()

    from rag_graphs.eval.corpus import open_corpus
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.store import load_embeddings
    from rag_graphs.store.sentences import build_sentences

    embeddings = load_embeddings("embedded")
    results: dict[str, dict] = {}
    for name in args.datasets:
        dataset = load_dataset(EVAL / name)
        index = open_corpus(dataset, args.store, embeddings, "embedded")
        start = time.perf_counter()

        def show(chunks: int, sentences: int, name: str = name, start: float = start) -> None:
            took = time.perf_counter() - start
            print(f"{name}: {chunks} chunks, {sentences} sentences, {took:.0f}s", flush=True)

        report = build_sentences(index, batch=128, progress=show)
        print(report.summary(), f"in {time.perf_counter() - start:.0f}s", flush=True)
        examples = dataset.select(limit=args.limit)
        base = {"store_uri": args.store, "collection": index.collection, "embeddings": embeddings, "k": 5}
        base["search_mode"] = args.mode
        results[name] = {"build": report.summary()}
        for unit in ("chunk", "sentence"):
            results[name][unit] = measure(base, unit, examples)
            print(name, unit, json.dumps(results[name][unit]), flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
