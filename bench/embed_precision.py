"""The embedded MiniLM in float32 and in bf16 (``store.embed_precision``), alternating (issue 47).

Three workloads, each on one torch thread as the package runs them (``LocalEmbeddings``'s small
calls, ingest's ``embed_on_one_thread``): ``--questions`` dev questions embedded one at a time
(``embed_query``: graph search's question vector; its query cache is emptied before each call),
the same questions' capitalised word runs as entity-like names in batches of 1,024
(``embed_documents``, as ingest embeds new entities' names), and ``--passages`` corpus passages in
one call (ingest's chunk embedding). Each workload runs ``--rounds`` times per precision, the
precisions alternating (fp32, bf16, bf16, fp32, ...); the medians are printed, with the cosine
between each text's two vectors (min, mean) and the largest |norm - 1| of the bf16 vectors.

    PYTHONPATH=. nice -n 10 .venv/bin/python bench/embed_precision.py --questions 300 \\
        --passages 256 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

EVAL = (
    Path("/work/shared/eval")
    if Path("/work/shared/eval").is_dir()
    else Path(__file__).resolve().parents[2] / "shared" / "eval"
)
NAME = re.compile(r"(?:[A-Z][\w'-]+ ?)+")


def read_texts(dataset: str, questions: int, passages: int) -> tuple[list[str], list[str], list[str]]:
    """Questions, name-like word runs taken from them (distinct), and passages (title, blank line, text)."""
    with (EVAL / dataset / "dev.jsonl").open(encoding="utf-8") as lines:
        asked = [json.loads(line)["question"] for line, _ in zip(lines, range(questions), strict=False)]
    names = list(dict.fromkeys(m.strip() for q in asked for m in NAME.findall(q)))
    with (EVAL / dataset / "corpus.jsonl").open(encoding="utf-8") as lines:
        rows = [json.loads(line) for line, _ in zip(lines, range(passages), strict=False)]
    return asked, names, [f"{r.get('title', '')}\n\n{r.get('text', '')}" for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", default="hotpotqa")
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--passages", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import numpy as np
    import torch

    from rag_graphs.store.embed_precision import native_bf16
    from rag_graphs.store.embeddings import embedded_model_dir
    from rag_graphs.store.local_embeddings import LocalEmbeddings
    from rag_graphs.store.torch_threads import one_thread

    models = {  # as ``store.embeddings`` loads the embedded model, once per precision
        arm: LocalEmbeddings(
            model=str(embedded_model_dir()),
            model_kwargs={"device": "cpu", "local_files_only": True},
            encode_kwargs={"normalize_embeddings": True},
            bf16=arm == "bf16",
        )
        for arm in ("fp32", "bf16")
    }
    asked, names, passages = read_texts(args.dataset, args.questions, args.passages)

    def questions(model: LocalEmbeddings) -> list[list[float]]:
        out = []
        for q in asked:
            model._queries.clear()  # time the model, not the cache
            out.append(model.embed_query(q))
        return out

    def name_batches(model: LocalEmbeddings) -> list[list[float]]:
        with one_thread():
            return [v for i in range(0, len(names), 1024) for v in model.embed_documents(names[i : i + 1024])]

    def chunk_call(model: LocalEmbeddings) -> list[list[float]]:
        with one_thread():
            return model.embed_documents(passages)

    work = {"questions": questions, "names": name_batches, "passages": chunk_call}
    report: dict = {
        "cpu": torch.cpu.get_capabilities().get("cpu_name"),
        "native_bf16": native_bf16(),
        "torch": torch.__version__,
        "counts": {"questions": len(asked), "names": len(names), "passages": len(passages)},
        "load": os.getloadavg()[0],
    }
    for name, fn in work.items():
        seconds: dict[str, list[float]] = {"fp32": [], "bf16": []}
        vectors: dict[str, np.ndarray] = {}
        for n in range(args.rounds * 2):
            arm = ("fp32", "bf16", "bf16", "fp32")[n % 4]
            if n < 2:  # warm each path once, untimed
                fn(models[arm])
            start = time.perf_counter()
            got = fn(models[arm])
            seconds[arm].append(time.perf_counter() - start)
            vectors[arm] = np.asarray(got, dtype=np.float64)
        cos = (vectors["fp32"] * vectors["bf16"]).sum(1)
        row = {arm: statistics.median(s) for arm, s in seconds.items()}
        row["fp32 / bf16"] = row["fp32"] / row["bf16"]
        row["per text ms (fp32, bf16)"] = [1000 * row[a] / len(vectors[a]) for a in ("fp32", "bf16")]
        row["cos min"], row["cos mean"] = float(cos.min()), float(cos.mean())
        row["max |norm-1| bf16"] = float(np.abs(np.linalg.norm(vectors["bf16"], axis=1) - 1).max())
        report[name] = row
        print(name, json.dumps(row), flush=True)
    report["load_after"] = os.getloadavg()[0]
    print(json.dumps(report, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
