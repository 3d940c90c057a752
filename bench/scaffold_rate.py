"""Share of answers that carry prompt scaffolding, over every evaluator row found.

Scans ``rows.jsonl`` files (by default every one under ``bench_runs/``; pass run
directories, row files or other roots to scan those) with the detector the tests use,
``rag_graphs.text.answers.scaffolding``. Rows without a prediction (retrieval-only runs,
runs stopped before their answer) are not answers and are not counted. The
"after cleaning" column applies ``clean_answer`` to the stored predictions: what the
post-processing alone would have removed from answers generated before it existed.

    .venv/bin/python bench/scaffold_rate.py                  # bench_runs/
    .venv/bin/python bench/scaffold_rate.py runs/hotpotqa-*  # some run directories
"""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rag_graphs.text.answers import clean_answer, scaffolding
from rag_graphs.text.jsonl import read_jsonl

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Tally:
    """Answers and scaffolded answers of one rows file."""

    answers: int = 0
    scaffolded: int = 0
    after_cleaning: int = 0
    markers: Counter[str] = field(default_factory=Counter)
    example: str = ""

    def add(self, prediction: str) -> None:
        self.answers += 1
        found = scaffolding(prediction)
        if found:
            self.scaffolded += 1
            self.markers[found[:24]] += 1
            self.example = self.example or prediction
        self.after_cleaning += scaffolding(clean_answer(prediction)) is not None


def row_files(paths: list[Path]) -> list[Path]:
    """Every ``rows.jsonl`` under ``paths`` (a path that is itself a rows file counts as one)."""
    files: list[Path] = []
    for path in paths:
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files.extend(sorted(path.rglob("rows.jsonl")))
        else:
            raise SystemExit(f"scaffold_rate: {path} does not exist")
    return files


def tally(path: Path) -> Tally:
    """Count the answered rows of one rows file and those with scaffolding."""
    counts = Tally()
    for _, row in read_jsonl(path):
        prediction = row.get("prediction") or ""
        if prediction.strip() and not row.get("retrieval_only"):
            counts.add(prediction)
    return counts


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[ROOT / "bench_runs"])
    args = parser.parse_args()
    files = row_files(args.paths)
    total = Tally()
    print("| rows file | answers | with scaffolding | after cleaning | first markers |")
    print("|---|---|---|---|---|")
    for path in files:
        counts = tally(path)
        total.answers += counts.answers
        total.scaffolded += counts.scaffolded
        total.after_cleaning += counts.after_cleaning
        total.markers.update(counts.markers)
        total.example = total.example or counts.example
        markers = ", ".join(f"`{m}` {n}" for m, n in counts.markers.most_common(3))
        print(
            f"| {path} | {counts.answers} | {percent(counts.scaffolded, counts.answers)} "
            f"| {percent(counts.after_cleaning, counts.answers)} | {markers} |"
        )
    print(
        f"| **all ({len(files)} files)** | {total.answers} | {percent(total.scaffolded, total.answers)} "
        f"| {percent(total.after_cleaning, total.answers)} | |"
    )
    if total.example:
        print(f"\nexample: {total.example[:200]!r}")


if __name__ == "__main__":
    main()
