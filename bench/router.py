"""How the ``auto`` router classifies real multi-hop questions, by classifier.

Every question of these datasets needs retrieval (all are 2-4 hop), so a
router that answers them "without retrieval" is wrong, and one that calls them
multi-hop is right. Compares ``router="examples"`` (nearest labelled examples,
no model call) with ``router="llm"`` (the embedded chat model chooses).

Run: ``.venv/bin/python bench/router.py [--limit 25]`` (part of ``make bench``;
~1 min). Writes the ``router`` section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections import Counter
from pathlib import Path

from sections import replace_section

EVAL = Path(__file__).resolve().parent.parent.parent / "shared" / "eval"
DATASETS = ("hotpotqa", "musique", "2wikimultihopqa", "bamboogle")
KINDS = ("no_retrieval", "single_hop", "multi_hop", "global_summary")


def kinds_by(router: str, questions: list[str]) -> tuple[Counter, float]:
    """Question kinds ``router`` chooses for ``questions``, and the median seconds per question."""
    from langgraph.runtime import Runtime

    from rag_graphs.config.context import RagContext
    from rag_graphs.methods.auto import classify

    ctx = RagContext(router=router)
    runtime = Runtime(context=ctx)
    counts: Counter = Counter()
    seconds = []
    for question in questions:
        t = time.perf_counter()
        counts[classify({"question": question}, runtime)["kind"]] += 1
        seconds.append(time.perf_counter() - t)
    return counts, statistics.median(seconds)


def main() -> None:
    from rag_graphs.eval.datasets import load_dataset

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=25, help="first N dev questions per dataset")
    args = parser.parse_args()
    rows = ["| dataset | router | n | " + " | ".join(KINDS) + " | sent to retrieval | s/question |"]
    rows.append("|---" * (len(KINDS) + 5) + "|")
    for name in DATASETS:
        questions = [e.question for e in load_dataset(EVAL / name).select(limit=args.limit)]
        for router in ("examples", "llm"):
            counts, seconds = kinds_by(router, questions)
            retrieved = sum(counts[k] for k in ("single_hop", "multi_hop", "global_summary"))
            cells = " | ".join(str(counts[k]) for k in KINDS)
            rows.append(
                f"| {name} | {router} | {len(questions)} | {cells} | "
                f"{100 * retrieved / len(questions):.0f}% | {seconds:.3f} |"
            )
            print(rows[-1], flush=True)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    replace_section(
        "router",
        f"`.venv/bin/python bench/router.py --limit {args.limit}` (part of `make bench`), "
        f"{time.strftime('%Y-%m-%d')}, {machine}. First {args.limit} dev questions of each dataset "
        "(every one needs retrieval); embedded models. `examples`: nearest labelled example "
        "questions (`prompts/question_kinds.json`) under MiniLM; `llm`: SmolLM2-135M chooses.\n\n"
        + "\n".join(rows),
        heading="Adaptive router: question kinds",
    )


if __name__ == "__main__":
    main()
