"""Where graph search's gold passages fall outside the top 5, by cause (issue 47, 2Wiki's misses).

Reads ``bench/graph_ltr.py dump`` files (each question's pool, features, seeds, walked gold) and a
ranker file, and sorts every gold passage outside the ranker's top 5 on one half (tune by
default: the check half's misses are never looked at) into:

* **not walked**: not in the neighbourhood graph search read (no entity path from the question);
* **walked, not pooled**: walked but past the pool (today's first 30, the first hits, the bridge hop);
* **pooled, 6-10** / **pooled, past 10**: in the ranker's pool, ranked below the top 5;

and, across those, whether the question names the gold passage's title (a first-hop page, its title
a linked seed: ``named``) or not (a bridge page), by question type, and whether the question was
linked at all (any seed).

    PYTHONPATH=. .venv/bin/python bench/graph_misses.py bench_runs/ltr_2wikimultihopqa_hippocorpus.jsonl \\
        --eval /work/shared/eval --ranker rag_graphs/data/graph_ranker.json --bridge 5
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def titles_of(eval_dir: Path, datasets: set[str], wanted: set[str]) -> dict[str, str]:
    """Gold passage id -> its title, from each dataset's corpus."""
    out: dict[str, str] = {}
    for name in datasets:
        with open(eval_dir / name / "corpus.jsonl") as fh:
            for line in fh:
                row = json.loads(line)
                if row["id"] in wanted:
                    out[row["id"]] = row.get("title") or ""
    return out


def main() -> None:
    from graph_ltr import CANDIDATES, SHIPPED, Before, folds, load, prepare

    from rag_graphs.entity_graph.entities import normalize
    from rag_graphs.entity_graph.learned_rank import load_ranker

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dumps", nargs="+")
    parser.add_argument("--eval", required=True)
    parser.add_argument("--ranker", default=None, help="a ranker file (default: the shipped one)")
    parser.add_argument("--half", default="tune", choices=["tune", "check"])
    parser.add_argument("--bridge", type=int, default=None)
    parser.add_argument("--show", action="store_true", help="print every missed passage's question")
    parser.add_argument(
        "--cv",
        action="store_true",
        help="rank each tune question by the shipped model fitted on the other 4 folds",
    )
    parser.add_argument("--columns", type=int, default=None, help="only the first N features (with --cv)")
    parser.add_argument("--dataset", default=None, help="report this dataset only")
    args = parser.parse_args()
    width = len(json.loads(Path(args.ranker).read_text())["features"]) if args.ranker else None
    columns = args.columns if args.cv else width
    rows = [r for r in prepare(load(args.dumps), args.bridge, columns=columns) if r["half"] == args.half]
    ranker = None if args.cv else Before(args.ranker) if args.ranker else load_ranker()
    scored: dict[str, np.ndarray] = {}
    if args.cv:
        for train, held in folds(rows):
            model = CANDIDATES[SHIPPED]().fit([r for r in train if "pool" in r])
            scored |= {r["id"]: model.score(np.asarray(r["x"])) for r in held if "pool" in r}
    if args.dataset:
        rows = [r for r in rows if r["dataset"] == args.dataset]
    titles = titles_of(Path(args.eval), {r["dataset"] for r in rows}, {g for r in rows for g in r["gold"]})
    causes: dict[str, Counter] = defaultdict(Counter)  # type -> cause -> recall points lost
    counts: dict[str, Counter] = defaultdict(Counter)
    questions: Counter = Counter()
    for r in rows:
        kind = f"{r['dataset'][:8]} {r.get('type') or '-'}"
        questions[kind] += 1
        if "pool" in r:
            score = scored[r["id"]] if ranker is None else ranker.score(np.asarray(r["x"]))
            order = [r["pool"][i] for i in np.argsort(-score, kind="stable")]
        else:
            order = r["today"]
        seeds = set(r.get("seeds") or [])
        for g in r["gold"]:
            if g in order[:5]:
                continue
            if g not in set(r.get("walked") or []):
                cause = "not walked"
            elif g not in order:
                cause = "walked, not pooled"
            else:
                cause = "pooled, 6-10" if order.index(g) < 10 else "pooled, past 10"
            title = titles.get(g, "")
            named = "named" if {normalize(title), normalize(title.split(" (")[0])} & seeds else "bridge"
            linked = "linked" if seeds else "unlinked"
            share = 100 / len(r["gold"])
            for key in (cause, f"{cause} / {named}", named, linked):
                causes[kind][key] += share
                counts[kind][key] += 1
            if args.show:
                place = order.index(g) + 1 if g in order else "-"
                print(f"{kind} | {cause} ({place}) | {named} | {title} | {r['id']} seeds={sorted(seeds)[:6]}")
    print("\n| questions of a type | n | missed gold passages by cause (R@5 points lost: summed / n) |")
    print("|---|---|---|")
    for kind in sorted(questions):
        cells = ", ".join(
            f"{key}: {counts[kind][key]} ({causes[kind][key] / questions[kind]:.2f})"
            for key in sorted(causes[kind], key=lambda k: -causes[kind][k])
        )
        print(f"| {kind} | {questions[kind]} | {cells or 'none'} |")


if __name__ == "__main__":
    main()
