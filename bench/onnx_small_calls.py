"""The embedded MiniLM's small calls on ONNX Runtime against torch (BENCHMARKS.md, "Graph search
latency, round 8"): one question's embedding, the two alternating question by question in one
process; the export's distance to sentence-transformers' float32 vectors; the model's load time
without the export, with a cold cache and with a kept export; each side's RSS after one question
(a process of its own per side).

    PYTHONPATH=. nice -n 5 .venv/bin/python bench/onnx_small_calls.py --questions 300
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EVAL = ROOT.parent / "shared" / "eval"


def model(onnx: bool):
    """The embedded spec's ``LocalEmbeddings`` as ``store.embeddings`` loads it, the ONNX small
    calls on or off."""
    from rag_graphs.store.embed_precision import use_bf16
    from rag_graphs.store.embeddings import embedded_model_dir
    from rag_graphs.store.local_embeddings import LocalEmbeddings

    return LocalEmbeddings(
        model=str(embedded_model_dir()),
        model_kwargs={"device": "cpu", "local_files_only": True},
        encode_kwargs={"normalize_embeddings": True},
        bf16=use_bf16(),
        onnx_small=onnx,
    )


def percentiles(ms: list[float]) -> str:
    ms = sorted(ms)
    return f"p50 {ms[len(ms) // 2]:.2f} / p90 {ms[int(len(ms) * 0.9)]:.2f} ms"


def rss(onnx: bool) -> None:
    """This process's RSS (MB) after loading one side and embedding one question."""
    model(onnx).embed_query("Which river flows through the city where Korvik was born?")
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    print(json.dumps({"onnx": onnx, "rss_mb": round(pages * 4096 / 1e6)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--rss", choices=("onnx", "torch"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss:
        return rss(args.rss == "onnx")
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from rag_graphs.store.embeddings import embedded_model_dir

    lines = (EVAL / "hotpotqa" / "dev.jsonl").read_text().splitlines()
    questions = [json.loads(line)["question"] for line in lines][: args.questions + 10]
    with tempfile.TemporaryDirectory() as cache:
        os.environ["XDG_CACHE_HOME"] = cache  # a cold cache first, then the export it keeps
        loads: dict[str, float] = {}
        torch_side: Any = None
        onnx_side: Any = None
        sides = (
            ("torch, first", False),
            ("onnx, cold cache", True),
            ("torch", False),
            ("onnx, kept export", True),
        )
        for name, onnx in sides:  # the first load also pays the imports
            start = time.perf_counter()
            loaded = model(onnx)
            loads[name] = time.perf_counter() - start
            torch_side, onnx_side = (torch_side, loaded) if onnx else (loaded, None)
        assert onnx_side is not None
    print("model load:", ", ".join(f"{n} {s:.2f} s" for n, s in loads.items()))
    for q in questions[:10]:  # warm both
        torch_side.embed_documents([q])
        onnx_side.embed_documents([q])
    took: dict[str, list[float]] = {"torch": [], "onnx": []}
    for i, q in enumerate(questions[10:]):
        order = (("torch", torch_side), ("onnx", onnx_side))
        for name, side in order if i % 2 else order[::-1]:
            start = time.perf_counter()
            side.embed_documents([q])  # a document call: no kept query vector answers it
            took[name].append((time.perf_counter() - start) * 1000)
    for name, ms in took.items():
        print(f"one question, {name}: {percentiles(ms)}")
    reference = SentenceTransformer(str(embedded_model_dir()), device="cpu", local_files_only=True)
    expected = reference.encode(questions[10:], normalize_embeddings=True)
    got = np.array(
        [v for i in range(10, len(questions), 32) for v in onnx_side.embed_documents(questions[i : i + 32])]
    )
    print(f"onnx against sentence-transformers float32: max |diff| {np.abs(got - expected).max():.2e}")
    for side in ("torch", "onnx"):
        out = subprocess.run(
            [sys.executable, __file__, "--rss", side], capture_output=True, text=True, check=True
        ).stdout.splitlines()[-1]
        print(f"RSS after one question, {side}: {json.loads(out)['rss_mb']} MB")


if __name__ == "__main__":
    main()
