"""The embedded MiniLM beside a thread that runs Python: eager (``encode`` under bf16 autocast, as
before issue 47 round 9) against the traced module (``store.traced_bf16``), alternating.

Why: ingest embeds in threads while other threads run Python (Milvus Lite's in-process server,
Docling, spaCy's tokenizer). An eager forward pass returns to Python, and so to the GIL, between
its ~100 kernels; a traced one runs in TorchScript's interpreter without it. Each arm embeds
``--passages`` HotpotQA passages in pieces of 64 and ``--names`` name-like word runs in pieces of
128 on one torch thread, alone and then beside a thread spinning in pure Python (the shape of
Milvus Lite's per-float ``validate_record``); wall seconds, medians over ``--rounds``. Both arms
must give the same vectors (checked, bit for bit). Needs a CPU with native bf16 (AMX or
AVX512-BF16): elsewhere the embedded model stays float32 and eager.

    PYTHONPATH=. nice -n 10 .venv/bin/python bench/embed_gil.py --passages 256 --names 2048 --rounds 3
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import statistics
import threading
import time
from collections.abc import Callable

from embed_precision import read_texts

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


class Spinner:
    """A thread running pure Python (isinstance checks, as Milvus Lite validates a vector) until stopped."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)

    def _spin(self) -> None:
        hits = 0
        while not self._stop.is_set():
            for i in range(1000):
                hits += isinstance(i, (int, float))

    def __enter__(self) -> Spinner:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="hotpotqa")
    parser.add_argument("--passages", type=int, default=256)
    parser.add_argument("--names", type=int, default=2048)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    from rag_graphs.store.embed_precision import native_bf16
    from rag_graphs.store.embeddings import embedded_model_dir
    from rag_graphs.store.torch_threads import one_thread
    from rag_graphs.store.traced_bf16 import trace_bf16

    if not native_bf16():
        raise SystemExit("this CPU has no native bf16 units: the embedded model runs float32 and eager here")
    questions, names, passages = read_texts(args.dataset, max(args.names, 300), args.passages)
    names = names[: args.names]
    model = SentenceTransformer(str(embedded_model_dir()), device="cpu", local_files_only=True)
    eager = copy.deepcopy(model)
    for layer in eager.modules():
        if isinstance(layer, torch.nn.Linear):
            layer.weight.data, layer.bias.data = layer.weight.data.bfloat16(), layer.bias.data.bfloat16()
    traced = trace_bf16(model)
    assert traced is not None

    def eager_embed(texts: list[str], size: int) -> list[list[float]]:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return eager.encode(texts, batch_size=size, normalize_embeddings=True).tolist()

    arms: dict[str, Callable[[list[str], int], list[list[float]]]] = {
        "eager": eager_embed,
        "traced": traced.embed,
    }
    work = {"passages": (passages, 64), "names": (names, 128)}
    for kind, (texts, size) in work.items():
        same = arms["eager"](texts, size) == arms["traced"](texts, size)
        print(f"{kind}: {len(texts)} texts, pieces of {size}; eager and traced bit for bit equal: {same}")
    seconds: dict[tuple[str, str, str], list[float]] = {}
    for _ in range(args.rounds):
        for kind, (texts, size) in work.items():
            for arm, embed in arms.items():
                for beside in ("alone", "beside Python"):
                    with one_thread(), Spinner() if beside != "alone" else contextlib.nullcontext():
                        start = time.perf_counter()
                        for i in range(0, len(texts), size):
                            embed(texts[i : i + size], size)
                        seconds.setdefault((kind, arm, beside), []).append(time.perf_counter() - start)
    print("| texts | arm | alone (s) | beside a Python thread (s) | slowdown |")
    print("|---|---|---|---|---|")
    for kind in work:
        for arm in arms:
            alone = statistics.median(seconds[(kind, arm, "alone")])
            beside = statistics.median(seconds[(kind, arm, "beside Python")])
            print(f"| {kind} | {arm} | {alone:.2f} | {beside:.2f} | {beside / alone:.2f}x |")


if __name__ == "__main__":
    main()
