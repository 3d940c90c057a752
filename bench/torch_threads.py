"""MiniLM's calls on torch's default threads against ``LocalEmbeddings`` (small calls on one
thread), in one process, alternating call by call (BENCHMARKS.md, "torch's threads").

Four kinds of call, as the product makes them: a search's query (``embed_query``), the reader's
sentences (12 texts), a reranker's or a small ingest's batch (32 passages) and an ingest batch
(256 passages, above ``SMALL_CALL``: both sides run torch's default there, so that row is the
control). The two models are the same weights loaded twice; only the thread switch differs.

    nice -n 10 .venv/bin/python bench/torch_threads.py --rounds 30

``--callers N`` makes each call from N threads at once (fresh threads, released together: a
server's concurrent requests), and ``--old DIR`` adds a third model, the ``LocalEmbeddings`` of
another checkout (its ``rag_graphs/store/local_embeddings.py``, loaded by path: the counted
switch of 5188680 and before, where a call that comes in while another runs keeps torch's count):

    nice -n 10 .venv/bin/python bench/torch_threads.py --rounds 20 --callers 2 --old /tmp/threads_old
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def old_model(root: Path, **fields: Any) -> Any:
    """The ``LocalEmbeddings`` of the checkout at ``root``, loaded by path beside this one's."""
    spec = importlib.util.spec_from_file_location(
        "old_local_embeddings", root / "rag_graphs" / "store" / "local_embeddings.py"
    )
    if spec is None or spec.loader is None:
        raise SystemExit(f"--old {root}: no rag_graphs/store/local_embeddings.py there")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LocalEmbeddings(**fields)


def timed(call: Callable[[Any, int], object], model: object, i: int, callers: int) -> list[float]:
    """Milliseconds of ``call(model, i + c)`` made by ``callers`` new threads released together."""
    start = threading.Barrier(callers)
    times: list[float] = []

    def one(c: int) -> None:
        start.wait()
        began = time.perf_counter()
        call(model, i * callers + c)
        times.append(1000 * (time.perf_counter() - began))

    workers = [threading.Thread(target=one, args=(c,)) for c in range(callers)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=30, help="calls of each kind per model")
    parser.add_argument("--callers", type=int, default=1, help="threads making each call at once")
    parser.add_argument("--old", type=Path, help="a checkout whose LocalEmbeddings to add as a third model")
    args = parser.parse_args()

    import torch
    from langchain_huggingface import HuggingFaceEmbeddings

    from rag_graphs.store.embeddings import embedded_model_dir, load_embeddings

    fields: dict[str, Any] = {
        "model_name": str(embedded_model_dir()),
        "model_kwargs": {"device": "cpu", "local_files_only": True},
        "encode_kwargs": {"normalize_embeddings": True},
    }
    models: dict[str, Any] = {"torch default": HuggingFaceEmbeddings(**fields)}
    if args.old:
        models["old switch (counted)"] = old_model(args.old.resolve(), **fields)
    models["small calls on one thread"] = load_embeddings("embedded")
    questions, passages = texts(args.rounds * args.callers)
    sentences = [s for p in passages for s in p.split(". ") if s]
    kinds: dict[str, Callable[[Any, int], object]] = {
        "query": lambda m, i: m.embed_query(questions[i % len(questions)]),
        "12 sentences": lambda m, i: m.embed_documents(sentences[12 * i : 12 * i + 12]),
        "32 passages": lambda m, i: m.embed_documents(passages[(32 * i) % 256 : (32 * i) % 256 + 32]),
        "256 passages": lambda m, i: m.embed_documents(passages[:256]),
    }
    print(
        f"torch threads {torch.get_num_threads()}, cpus {os.cpu_count()}, callers {args.callers}, "
        f"load {os.getloadavg()[0]:.1f}; columns: {' | '.join(models)}"
    )
    for model in models.values():
        model.embed_query("warm up")
    for kind, call in kinds.items():
        rounds = args.rounds if kind != "256 passages" else max(2, args.rounds // 10)
        times: dict[str, list[float]] = {name: [] for name in models}
        order = list(models)
        for i in range(rounds):
            for name in order[i % len(order) :] + order[: i % len(order)]:  # each side first in turn
                times[name] += timed(call, models[name], i, args.callers)
        print(
            f"| {kind} | {len(times[order[0]])} | "
            + " | ".join(
                f"{statistics.median(t):.0f} / {sorted(t)[round(0.9 * (len(t) - 1))]:.0f}"
                for t in times.values()
            )
            + f" | load {os.getloadavg()[0]:.1f} |",
            flush=True,
        )
    print(f"torch threads of a new thread at the end: {new_thread_count(torch)}")


def new_thread_count(torch: Any) -> int:
    """torch's thread count a thread created now starts on."""
    seen: list[int] = []
    worker = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    worker.start()
    worker.join()
    return seen[0]


if __name__ == "__main__":
    main()
