"""MiniLM's calls on torch's default threads against ``LocalEmbeddings`` (small calls on one
thread), in one process, alternating call by call (BENCHMARKS.md, "torch's threads").

Four kinds of call, as the product makes them: a search's query (``embed_query``), the reader's
sentences (12 texts), a reranker's or a small ingest's batch (32 passages) and an ingest batch
(256 passages, above ``SMALL_CALL``: both sides run torch's default there, so that row is the
control). The two models are the same weights loaded twice; only the thread switch differs.

    nice -n 10 .venv/bin/python bench/torch_threads.py --rounds 30
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval"


def texts(limit: int) -> tuple[list[str], list[str]]:
    """HotpotQA's first questions and corpus passages (any JSONL with ``question``/``text``)."""
    root = EVAL if EVAL.is_dir() else Path("../shared/eval")
    with (root / "hotpotqa" / "dev.jsonl").open() as lines:
        questions = [json.loads(line)["question"] for _, line in zip(range(limit), lines, strict=False)]
    with (root / "hotpotqa" / "corpus.jsonl").open() as lines:
        passages = [json.loads(line)["text"] for _, line in zip(range(300), lines, strict=False)]
    return questions, passages


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=30, help="calls of each kind per model")
    args = parser.parse_args()

    import torch
    from langchain_huggingface import HuggingFaceEmbeddings

    from rag_graphs.store.embeddings import embedded_model_dir, load_embeddings

    new = load_embeddings("embedded")
    old = HuggingFaceEmbeddings(
        model_name=str(embedded_model_dir()),
        model_kwargs={"device": "cpu", "local_files_only": True},
        encode_kwargs={"normalize_embeddings": True},
    )
    questions, passages = texts(args.rounds)
    sentences = [s for p in passages for s in p.split(". ") if s]
    kinds: dict[str, Callable[[object, int], object]] = {
        "query": lambda m, i: m.embed_query(questions[i % len(questions)]),
        "12 sentences": lambda m, i: m.embed_documents(sentences[12 * i : 12 * i + 12]),
        "32 passages": lambda m, i: m.embed_documents(passages[(32 * i) % 256 : (32 * i) % 256 + 32]),
        "256 passages": lambda m, i: m.embed_documents(passages[:256]),
    }
    print(f"torch threads {torch.get_num_threads()}, cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}")
    for model in (old, new):
        model.embed_query("warm up")
    for kind, call in kinds.items():
        rounds = args.rounds if kind != "256 passages" else max(2, args.rounds // 10)
        times: dict[str, list[float]] = {"torch default": [], "small calls on one thread": []}
        for i in range(rounds):
            pair = [("torch default", old), ("small calls on one thread", new)]
            for name, model in pair if i % 2 == 0 else pair[::-1]:
                started = time.perf_counter()
                call(model, i)
                times[name].append(1000 * (time.perf_counter() - started))
        print(
            f"| {kind} | {rounds} | "
            + " | ".join(
                f"{statistics.median(t):.0f} / {sorted(t)[round(0.9 * (len(t) - 1))]:.0f}"
                for t in times.values()
            )
            + f" | load {os.getloadavg()[0]:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
