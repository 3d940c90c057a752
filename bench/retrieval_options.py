"""Retrieval options of the shared retrieve step against the plain setting, in one run.

For each dataset under ``../shared/eval`` (read in place), the corpus collection the
evaluator builds (``rag_graphs.eval.corpus.open_corpus``: indexed once, reused) is searched
for the first ``--limit`` dev questions with each option of ``OPTIONS``, through the same
code the retrieve node runs (``retriever_for(ctx, k=fetch_k(ctx))``, then ``reranked``,
``expanded`` and ``compressed`` as ``found()`` calls them), so
the numbers are what ``rag-graphs eval --retrieval-only -m naive --k 5`` reports for each
(R@5 counts the first 5 of the expanded ranking, tokens all of it)
setting. Reported per option: supporting-passage R@5 (gold = ``supporting_ids``), prompt
tokens of the kept passages (the embedded chat model's tokenizer) and ms per question.
Options run with the search cache off (``search_cache=0``) so no option reads another's
searches. ``cache`` then runs the plain setting twice with the cache on (cold, then the rerun)
and reports the rerun's hit rate and the time it saved.

Run:
    .venv/bin/python bench/retrieval_options.py --store /tmp/ropt_bench.db --limit 100

``--store`` should be a copy of a store that already holds the corpora (indexing runs at
about 10 passages/s here); Milvus Lite allows one process per path.
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
DATASETS = ["hotpotqa", "musique"]
OPTIONS: dict[str, dict] = {  # name: RagContext overrides
    "plain (hybrid, k=5)": {},
    "mmr lambda=0.5, fetch_k=20": {"reranker": "mmr", "mmr_lambda": 0.5, "fetch_k": 20},
    "mmr lambda=0.7, fetch_k=20": {"reranker": "mmr", "mmr_lambda": 0.7, "fetch_k": 20},
    "expand neighbours:1": {"expand": "neighbours:1"},
    "compress embeddings:0.2": {"compress": "embeddings:0.2"},
    "compress embeddings:0.3": {"compress": "embeddings:0.3"},
    "compress embeddings:0.5": {"compress": "embeddings:0.5"},
    "compress redundant:0.9": {"compress": "redundant:0.9"},
    "compress redundant:0.95": {"compress": "redundant:0.95"},
    "compress embeddings:0.3,redundant:0.95": {"compress": "embeddings:0.3,redundant:0.95"},
    "compress llm": {"compress": "llm"},
    "reranker llm, fetch_k=10": {"reranker": "llm", "fetch_k": 10},
}


def recall(ranked: list[str], gold: tuple[str, ...], k: int) -> float:
    return len(set(ranked[:k]) & set(gold)) / len(gold) if gold else 0.0


def run_option(base: dict, overrides: dict, examples, count_tokens) -> dict:
    from rag_graphs.config.context import RagContext
    from rag_graphs.nodes.retrieve import compressed, expanded, fetch_k, reranked
    from rag_graphs.search.retrieval import retriever_for

    ctx = RagContext(**base, **overrides)
    r5, tokens, ms, fallbacks = [], [], [], []
    for example in examples:
        start = time.perf_counter()
        docs = retriever_for(ctx, k=fetch_k(ctx)).invoke(example.question)
        [kept], notes, _ = reranked(ctx, [example.question], [docs])
        [kept], _ = expanded(ctx, [example.question], [kept], [])
        [kept], _, _ = compressed(ctx, [example.question], [kept], [])
        fallbacks.append(any("kept the search order" in n.get("text", "") for n in notes))
        ms.append((time.perf_counter() - start) * 1000)
        r5.append(recall([str(d.id) for d in kept], example.supporting_ids, 5))
        tokens.append(sum(count_tokens(d.page_content) for d in kept))
    return {
        "R@5": 100 * statistics.mean(r5),
        "tokens": statistics.mean(tokens),
        "ms": statistics.mean(ms),
        "llm_fallbacks": sum(fallbacks),  # searches whose LLM ranking was unusable (search order kept)
    }


def run_cache(base: dict, examples) -> dict:
    """The plain setting twice over the same questions with the search cache on."""
    from rag_graphs.config.context import RagContext
    from rag_graphs.search.cache import SEARCHES
    from rag_graphs.search.retrieval import retriever_for

    ctx = RagContext(**{**base, "search_cache": 1024})
    SEARCHES.clear()
    seconds = []
    for _ in range(2):
        start = time.perf_counter()
        for example in examples:
            retriever_for(ctx).invoke(example.question)
        seconds.append(time.perf_counter() - start)
    stats = SEARCHES.stats()
    return {
        "cold_s": seconds[0],
        "rerun_s": seconds[1],
        **stats,
        "rerun_hit_rate": stats["hits"] / len(examples),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--store", required=True, help="Milvus Lite store holding (or to hold) the corpora")
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--only-cache", action="store_true", help="measure the search cache alone")
    parser.add_argument("--options", nargs="+", default=list(OPTIONS), help="names of OPTIONS to run")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "retrieval_options.json")
    args = parser.parse_args()

    from rag_graphs.eval.corpus import open_corpus
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.llm.models import load_chat_model
    from rag_graphs.store import load_embeddings

    embeddings = load_embeddings("embedded")
    llama = load_chat_model("embedded").client  # type: ignore[attr-defined]

    def count_tokens(text: str) -> int:
        return len(llama.tokenize(text.encode(), add_bos=False))

    results: dict[str, dict] = {}
    for name in args.datasets:
        dataset = load_dataset(EVAL / name)
        index = open_corpus(dataset, args.store, embeddings, "embedded")
        examples = dataset.select(limit=args.limit)
        base = {"store_uri": args.store, "collection": index.collection, "embeddings": embeddings, "k": 5}
        results[name] = {}
        for option in [] if args.only_cache else args.options:
            overrides = OPTIONS[option]
            results[name][option] = run_option({**base, "search_cache": 0}, overrides, examples, count_tokens)
            print(name, option, json.dumps(results[name][option]), flush=True)
        results[name]["cache"] = run_cache(base, examples)
        print(name, "cache", json.dumps(results[name]["cache"]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"| option | {' | '.join(f'{d} R@5 | {d} tokens' for d in args.datasets)} |")
    for option in [] if args.only_cache else args.options:
        cells = " | ".join(
            f"{results[d][option]['R@5']:.1f} | {results[d][option]['tokens']:.0f}" for d in args.datasets
        )
        print(f"| {option} | {cells} |")


if __name__ == "__main__":
    main()
