"""Two graph searches' rankings question for question, from ``bench/graph_ltr.py dump`` files: each
side a dump prefix (one dump per dataset, ``PREFIX_DATASET.jsonl``) and a ranker file, so a change of
the pool (a dump taken with other code) and of the ranker are compared on the same questions.

    PYTHONPATH=. .venv/bin/python bench/graph_compare.py --half check \\
        --old bench_runs/pg bench_runs/ranker_main.json --new bench_runs/tp bench_runs/ranker_main.json

Prints, per dataset: hybrid's, the old and the new R@2 / R@5, the questions the new side wins and
loses at R@5 and at R@2, and the questions where its R@2 is below hybrid's. Offline it gives what
``bench/reader.py`` measures through the product (issue 47: to the question on the check halves).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

DATASETS = ("2wikimultihopqa_hippocorpus", "hotpotqa", "musique")


def rankings(prefix: str, ranker_path: str, dataset: str, half: str, bridge: int) -> dict[str, dict]:
    """Question id -> its gold, hybrid's top and the ranker's order over its dumped pool."""
    from graph_ltr import Before, load, prepare, ranked_by

    ranker = Before(ranker_path)
    rows = prepare(load([f"{prefix}_{dataset}.jsonl"]), bridge, columns=ranker.n)
    return {
        r["id"]: {
            "gold": r["gold"],
            "hybrid": r["hybrid"],
            "order": ranked_by(r, ranker.score(np.asarray(r["x"]))) if "x" in r else r["today"],
        }
        for r in rows
        if r["half"] == half
    }


def row(name: str, old: dict[str, dict], new: dict[str, dict]) -> str:
    """One table row: hybrid's, the old and the new R@2 / R@5, the new side's wins and losses."""
    from graph_ltr import recall

    ids = sorted(old)
    assert set(new) == set(ids), f"{name}: the two dumps hold other questions"
    hybrid = {q: {**old[q], "order": old[q]["hybrid"]} for q in ids}

    def at(side: dict[str, dict], q: str, k: int) -> float:
        return recall(side[q]["order"], side[q]["gold"], k)

    def mean(side: dict[str, dict], k: int) -> str:
        return f"{100 * statistics.mean(at(side, q, k) for q in ids):.1f}"

    def count(k: int, sign: int) -> int:
        return sum(sign * (at(new, q, k) - at(old, q, k)) > 0 for q in ids)

    below = sum(at(new, q, 2) < at(hybrid, q, 2) for q in ids)
    return (
        f"| {name} | {len(ids)} | {mean(hybrid, 2)} / {mean(hybrid, 5)} | {mean(old, 2)} / {mean(old, 5)} "
        f"| {mean(new, 2)} / {mean(new, 5)} | {count(5, 1)} / {count(5, -1)} "
        f"| {count(2, 1)} / {count(2, -1)} | {below} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--half", default="tune", choices=["tune", "check"])
    parser.add_argument("--old", nargs=2, required=True, metavar=("PREFIX", "RANKER"))
    parser.add_argument("--new", nargs=2, required=True, metavar=("PREFIX", "RANKER"))
    parser.add_argument("--bridge", type=int, default=5, help="bridge passages a pool (candidates.BRIDGE)")
    args = parser.parse_args()
    print(
        "| dataset | questions | hybrid R@2 / R@5 | old | new | R@5 won / lost | R@2 won / lost "
        "| R@2 below hybrid |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in DATASETS:
        old = rankings(*args.old, name, args.half, args.bridge)
        new = rankings(*args.new, name, args.half, args.bridge)
        print(row(name, old, new))


if __name__ == "__main__":
    main()
