"""Forward-pass width for short texts (``store.local_embeddings.batch_size``) against
sentence-transformers' fixed 32, alternating, on one torch thread as ingest runs them (issue 47).

Two workloads from a dev corpus's first ``--passages`` passages (read in place from
``../shared/eval``): the passages themselves (title, blank line, text: ingest's chunks) and the
distinct names spaCy's NER finds in them, titles included (the new entities' names ingest embeds,
~8 tokens each; here in one call, where ingest embeds pieces of 128). Each is embedded
``--rounds`` times per arm through ``LocalEmbeddings`` (the embedded model, in this machine's
precision), the arms alternating (rule first in odd rounds); the
arms differ only in ``encode_kwargs["batch_size"]``: unset (the rule) or 32. Printed per workload:
each arm's median CPU seconds, the median of the paired ratios (rule / fixed) with its quartiles,
and the batch size the rule chose for the workload's longest text. These machines are noisy (the
same call's CPU moves +-20% by the hour): read the paired ratios.

    PYTHONPATH=. nice -n 5 .venv/bin/python bench/embed_batches.py --passages 1000 --rounds 6
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

ROOT = Path(__file__).resolve().parents[1]
EVAL = ROOT.parent / "shared" / "eval"
if not EVAL.exists():  # a worktree under /work/wt/<name>
    EVAL = ROOT.parents[1] / "shared" / "eval"


def read_workloads(dataset: str, passages: int) -> dict[str, list[str]]:
    """The first ``passages`` passages as ingest's chunk texts, and their distinct entity names."""
    from rag_graphs.entity_graph.entities import SpacyExtractor

    texts: list[str] = []
    titles: list[str] = []
    with (EVAL / dataset / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            if len(texts) >= passages:
                break
            passage = json.loads(line)
            title = str(passage.get("title") or passage["id"])
            titles.append(title)
            texts.append(f"{title}\n\n{passage['text']}")
    found = SpacyExtractor()(texts)
    names = list(dict.fromkeys(titles + [m for mentions in found for m in mentions]))
    return {"passages": texts, "names": names}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", default="hotpotqa")
    parser.add_argument("--passages", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--out", type=Path, help="write the per-round CPU seconds as JSON here")
    args = parser.parse_args()

    from rag_graphs.store.embeddings import load_embeddings
    from rag_graphs.store.local_embeddings import batch_size
    from rag_graphs.store.torch_threads import one_thread

    model = load_embeddings("embedded")
    workloads = read_workloads(args.dataset, args.passages)
    model.embed_documents(workloads["passages"][:64])  # warm
    results: dict[str, dict[str, list[float]]] = {}
    for name, texts in workloads.items():
        arms: dict[str, list[float]] = {"rule": [], "fixed 32": []}
        for round_ in range(args.rounds):
            for arm in ("rule", "fixed 32") if round_ % 2 else ("fixed 32", "rule"):
                model.encode_kwargs.pop("batch_size", None)
                if arm == "fixed 32":
                    model.encode_kwargs["batch_size"] = 32
                with one_thread():
                    cpu = time.process_time()
                    model.embed_documents(texts)
                    arms[arm].append(time.process_time() - cpu)
        model.encode_kwargs.pop("batch_size", None)
        ratios = [r / f for r, f in zip(arms["rule"], arms["fixed 32"], strict=True)]
        q1, _, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else (ratios[0],) * 3
        print(
            f"{name}: {len(texts)} texts, rule's batch {batch_size(texts)}; CPU s median: rule "
            f"{statistics.median(arms['rule']):.2f}, fixed 32 {statistics.median(arms['fixed 32']):.2f}; "
            f"paired rule / fixed median {statistics.median(ratios):.3f} (quartiles {q1:.3f}-{q3:.3f})",
            flush=True,
        )
        results[name] = arms
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
