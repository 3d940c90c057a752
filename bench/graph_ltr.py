"""Learned ranking over graph search's candidates (issue 47): dump features, train, evaluate.

Three steps, each its own sub-command, so the (slow) searches run once and the (fast) fitting
runs as often as needed:

    # 1. every question's candidate pool with its features (rag_graphs.entity_graph.candidates),
    #    one JSON line per question, from today's graph search on a store with the entity graph
    PYTHONPATH=. nice -n 10 .venv/bin/python bench/graph_ltr.py dump --dataset musique \\
        --store bench_runs/reader_musique.db --eval /work/shared/eval --out bench_runs/ltr_musique.jsonl
    # 2. fit rankers on the tune halves of every dump (5-fold by question for choosing), write the
    #    chosen ranker (LightGBM lambdarank, its trees flattened to JSON)
    .venv/bin/python bench/graph_ltr.py train bench_runs/ltr_*.jsonl --out rag_graphs/data/graph_ranker.json
    # 3. score a ranker file on both halves against today's graph search and hybrid search
    .venv/bin/python bench/graph_ltr.py evaluate bench_runs/ltr_*.jsonl --ranker bench_runs/graph_ranker.json
    # 4. graph search itself, the ranker off / on (/ a ranker file from before the bridge hop)
    PYTHONPATH=. nice -n 10 .venv/bin/python bench/graph_ltr.py search --dataset musique \
        --store bench_runs/reader_musique.db --eval /work/shared/eval --split tune --before OLD.json

``dump --bridge 20`` keeps up to 20 bridge passages a pool; ``train`` / ``evaluate --bridge N`` keep
the first N of them (as ``candidates.BRIDGE = N`` would) and ``train --before`` only the features
before the bridge's, so one dump measures every width and both feature sets.

Labels are the dev sets' gold supporting passages. Only the tune halves are ever fitted on;
``evaluate`` reports both. The dump times today's search per question and, apart, what a ranker
would add (the pool's vector read, the features, the scoring): ``ms_features``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- dump


def capture_stages() -> dict:
    """Wrap graph search's stages so that each search leaves what it formed in the returned dict."""
    import rag_graphs.entity_graph.first_search as first_search
    import rag_graphs.entity_graph.graph_search as searching

    seen: dict = {}

    def keep(name, function):
        def wrapper(*args, **kwargs):
            out = function(*args, **kwargs)
            seen[name] = (args, kwargs, out)
            return out

        return wrapper

    first_search.search_first_hits = keep("first", first_search.search_first_hits)
    for name in ("link_question", "fetch_neighbourhood", "walk", "embed_queries"):
        setattr(searching, name, keep(name, getattr(searching, name)))
    return seen


def dump(args) -> None:
    import rag_graphs.entity_graph.candidates as candidates
    from rag_graphs.config.graph_search import GraphSearchOptions
    from rag_graphs.entity_graph.graph_search import graph_search
    from rag_graphs.entity_graph.learned_rank import RankInputs, pool_features
    from rag_graphs.eval.corpus import collection_name
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.eval.halves import half_of
    from rag_graphs.store import load_embeddings, open_index

    candidates.POOL = args.pool  # the pool's depth in today's order (a measurement knob, not an option)
    candidates.BRIDGE = args.bridge  # the bridge hop's most passages (train --bridge keeps fewer)
    seen = capture_stages()
    options = GraphSearchOptions(learned_rank=False)  # today: the walk under hybrid's top
    embeddings = load_embeddings("embedded")
    dataset = load_dataset(Path(args.eval) / args.dataset)
    name = args.collection or collection_name(dataset, "embedded")
    index = open_index(args.store, name, embeddings)
    examples = dataset.examples[: args.limit]
    graph_search(index, examples[0].question, k=5, options=options)  # warm up
    with open(args.out, "w") as out:
        for n, e in enumerate(examples):
            seen.clear()
            start = time.perf_counter()
            found = graph_search(index, e.question, k=5, options=options)
            ms_search = (time.perf_counter() - start) * 1000
            hybrid5 = [str(d.id) for d, _ in index.search(e.question, k=5, mode="hybrid")]
            record = {
                "id": e.id,
                "dataset": args.dataset,
                "half": half_of(e.id),
                "gold": list(e.supporting_ids),
                "today": [str(d.id) for d, _ in found.hits],
                "hybrid": hybrid5,
                "ms_search": ms_search,
                "type": e.type,
            }
            if "link_question" in seen:
                record["seeds"] = list(seen["link_question"][2].seeds)
            if "fetch_neighbourhood" in seen:
                record["walked"] = [g for g in e.supporting_ids if g in seen["fetch_neighbourhood"][2].edges]
            if "walk" in seen and seen["walk"][2].probabilities is not None:
                walked = seen["walk"][2]
                first = seen["first"][2]
                protected = [str(d.id) for d, _ in first.ranking]
                start = time.perf_counter()
                held = RankInputs(
                    e.question,
                    seen["embed_queries"][2][0],
                    first,
                    seen["link_question"][2].seeds,
                    seen["fetch_neighbourhood"][2],
                    walked,
                    protected,
                )
                pool, features = pool_features(
                    index,
                    held,
                    k=5,
                    keep_first=options.keep_first,
                    keep_in_top=min(options.keep_in_top, 4),
                    expr=None,
                )
                record["ms_features"] = (time.perf_counter() - start) * 1000
                record["pool"] = pool
                record["x"] = np.round(features, 6).tolist()
            out.write(json.dumps(record) + "\n")
            if n % 50 == 0:
                print(f"{args.dataset}: {n}/{len(examples)} {ms_search:.0f} ms", flush=True)


class Before:
    """A ranker file written for the features before the bridge's (``FEATURES[:n]``): scores the
    first ``n`` columns, as graph search scored them before the bridge hop (``search --before``)."""

    def __init__(self, path: str) -> None:
        from rag_graphs.entity_graph import learned_rank

        data = json.loads(Path(path).read_text())
        self.n = len(data["features"])
        nodes = {key: np.asarray(data["nodes"][key], dtype=float) for key in learned_rank.NODE_FIELDS}
        self.trees = learned_rank.TreeRanker(
            tuple(data["features"]),
            nodes["feature"].astype(int),
            nodes["threshold"],
            nodes["left"].astype(int),
            nodes["right"].astype(int),
            nodes["value"],
            np.asarray(data["roots"], dtype=int),
        )

    def score(self, x: np.ndarray) -> np.ndarray:
        return self.trees.score(np.asarray(x)[:, : self.n])


def search(args) -> None:
    """Graph search as shipped, the learned ranker off and on, each arm first in turn per question
    (one process, one store, so load hits the arms alike): R@2 / R@5, losses, p50 / p90 ms of the
    whole search and of its rank stage. With ``--before FILE``, a third arm: the ranker before the
    bridge hop (that file, written for the 24 features before the bridge's; no bridge passages).
    """
    import rag_graphs.entity_graph.candidates as candidates
    import rag_graphs.entity_graph.graph_search as searching
    from rag_graphs.config.graph_search import GraphSearchOptions
    from rag_graphs.entity_graph.graph_search import graph_search
    from rag_graphs.entity_graph.learned_rank import shipped_ranker
    from rag_graphs.eval.corpus import collection_name
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.eval.halves import split
    from rag_graphs.store import load_embeddings, open_index

    arms = {"off": GraphSearchOptions(learned_rank=False), "on": GraphSearchOptions(learned_rank=True)}
    rankers = {"on": (shipped_ranker(), candidates.BRIDGE)}
    if args.before:
        arms["before"] = GraphSearchOptions(learned_rank=True)
        rankers["before"] = (Before(args.before), 0)

    def arm_ranker(arm: str) -> None:
        if arm in rankers:
            ranker, candidates.BRIDGE = rankers[arm]
            searching.shipped_ranker = lambda: ranker

    dataset = load_dataset(Path(args.eval) / args.dataset)
    index = open_index(
        args.store, args.collection or collection_name(dataset, "embedded"), load_embeddings("embedded")
    )
    examples = split(dataset.examples, args.split)[: args.limit]
    for arm, options in arms.items():
        arm_ranker(arm)
        graph_search(index, examples[0].question, k=5, options=options)  # warm up
    got: dict[str, dict] = {arm: {} for arm in arms}
    ms: dict[str, list[float]] = {arm: [] for arm in arms}
    ranking: dict[str, list[float]] = {arm: [] for arm in arms}  # the rank stage's lap alone
    hybrid = {}
    for n, e in enumerate(examples):
        turn = n % len(arms)  # each arm goes first in turn: the first search of a question reads cold rows
        for arm in [*list(arms)[turn:], *list(arms)[:turn]]:
            arm_ranker(arm)
            start = time.perf_counter()
            found = graph_search(index, e.question, k=5, options=arms[arm])
            ms[arm].append((time.perf_counter() - start) * 1000)
            ranking[arm].append(found.milliseconds.get("rank", 0.0))
            hits = found.hits
            got[arm][e.id] = [recall([str(d.id) for d, _ in hits], list(e.supporting_ids), k) for k in (2, 5)]
        ranked = [str(d.id) for d, _ in index.search(e.question, k=5, mode="hybrid")]
        hybrid[e.id] = [recall(ranked, list(e.supporting_ids), k) for k in (2, 5)]
    print(f"{args.dataset} {args.split} ({len(examples)} questions)")
    print(
        "| arm | R@2 / R@5 | p50 / p90 ms | rank stage p50 / p90 ms | R@5 lost / won vs off "
        "| R@2 below / above hybrid |"
    )
    print("|---|---|---|---|---|---|")
    r = lambda arm, i: 100 * statistics.mean(v[i] for v in got[arm].values())  # noqa: E731
    print(
        f"| hybrid | {100 * statistics.mean(v[0] for v in hybrid.values()):.1f} / "
        f"{100 * statistics.mean(v[1] for v in hybrid.values()):.1f} | | | | |"
    )
    for arm in arms:
        lost = sum(got[arm][q][1] < got["off"][q][1] for q in hybrid)
        won = sum(got[arm][q][1] > got["off"][q][1] for q in hybrid)
        below = sum(got[arm][q][0] < hybrid[q][0] for q in hybrid)
        above = sum(got[arm][q][0] > hybrid[q][0] for q in hybrid)
        p90 = sorted(ms[arm])[int(0.9 * len(ms[arm]))]
        rank90 = sorted(ranking[arm])[int(0.9 * len(ranking[arm]))]
        print(
            f"| learned_rank {arm} | {r(arm, 0):.1f} / {r(arm, 1):.1f} | {statistics.median(ms[arm]):.0f} / "
            f"{p90:.0f} | {statistics.median(ranking[arm]):.1f} / {rank90:.1f} | {lost} / {won} "
            f"| {below} / {above} |",
            flush=True,
        )


# ---------------------------------------------------------------- fit and score


def load(paths: list[str]) -> list[dict]:
    rows = []
    for path in paths:
        with open(path) as fh:
            rows.extend(json.loads(line) for line in fh)
    return rows


def recall(ranked: list[str], gold: list[str], k: int) -> float:
    return len(set(ranked[:k]) & set(gold)) / len(gold) if gold else 0.0


def labels(row: dict) -> np.ndarray:
    gold = set(row["gold"])
    return np.asarray([float(cid in gold) for cid in row["pool"]])


def ranked_by(row: dict, scores: np.ndarray, protect: tuple[int, int] = (0, 0)) -> list[str]:
    """The pool by ``scores`` (ties: today's pool order), then hybrid's first ``protect[0]`` on top
    and its first ``protect[1]`` inside the top 5, as graph search protects them."""
    if "pool" not in row:
        return row["today"]
    from rag_graphs.entity_graph.rank import keep_within, protect_first

    order = [row["pool"][i] for i in np.argsort(-scores, kind="stable")]
    keep_first, keep_in_top = protect
    if keep_first or keep_in_top:
        order = keep_within(
            protect_first(order, row["hybrid_first"], keep_first), row["hybrid_first"], keep_in_top, 5
        )
    return order


def hybrid_first(row: dict) -> list[str]:
    """Hybrid's ranking as graph search saw it (the pool rows flagged hybrid top 1/2, by rank)."""
    from rag_graphs.entity_graph.candidates import FEATURES

    column = FEATURES.index("hybrid_rrf")
    x = np.asarray(row["x"])
    held = [(x[i, column], cid) for i, cid in enumerate(row["pool"]) if x[i, column] > 0]
    return [cid for _, cid in sorted(held, key=lambda t: -t[0])]


class Linear:
    """Standardised features, one weight each, pairwise or pointwise logistic (the light comparison)."""

    def __init__(self, c: float = 1.0, pairwise: bool = True) -> None:
        self.c, self.pairwise = c, pairwise

    def fit(self, rows: list[dict]) -> Linear:
        from sklearn.linear_model import LogisticRegression

        x = np.vstack([np.asarray(r["x"]) for r in rows])
        self.mean, self.scale = x.mean(axis=0), x.std(axis=0)
        self.scale[self.scale == 0] = 1.0
        xs, ys = [], []
        for r in rows:
            z = (np.asarray(r["x"]) - self.mean) / self.scale
            y = labels(r)
            if self.pairwise:
                pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
                if len(pos) and len(neg):
                    diffs = (z[pos][:, None, :] - z[neg][None, :, :]).reshape(-1, z.shape[1])
                    xs += [diffs, -diffs]
                    ys += [np.ones(len(diffs)), np.zeros(len(diffs))]
            else:
                xs.append(z)
                ys.append(y)
        model = LogisticRegression(C=self.c, max_iter=2000, fit_intercept=not self.pairwise)
        model.fit(np.vstack(xs), np.concatenate(ys))
        self.weights = model.coef_[0]
        return self

    def score(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mean) / self.scale) @ self.weights

    def to_json(self, note: str) -> dict:
        from rag_graphs.entity_graph.candidates import FEATURES

        return {
            "kind": "linear",
            "note": note,
            "features": list(FEATURES),
            "mean": [round(float(v), 8) for v in self.mean],
            "scale": [round(float(v), 8) for v in self.scale],
            "weights": [round(float(v), 8) for v in self.weights],
        }


class Gbm:
    """LightGBM's lambdarank (the measurement's comparison; not shipped unless it wins clearly)."""

    def __init__(self, leaves: int = 15, trees: int = 200, rate: float = 0.05, min_leaf: int = 20) -> None:
        self.params = {
            "num_leaves": leaves,
            "n_estimators": trees,
            "learning_rate": rate,
            "min_child_samples": min_leaf,
        }

    def fit(self, rows: list[dict]) -> Gbm:
        import lightgbm

        x = np.vstack([np.asarray(r["x"]) for r in rows])
        y = np.concatenate([labels(r) for r in rows])
        group = [len(r["pool"]) for r in rows]
        self.model = lightgbm.LGBMRanker(
            objective="lambdarank",
            verbose=-1,
            random_state=0,
            subsample=0.8,
            subsample_freq=1,
            colsample_bytree=0.8,
            lambdarank_truncation_level=10,
            n_jobs=1,
            deterministic=True,
            force_row_wise=True,
            **self.params,
        )
        self.model.fit(x, y, group=group)
        return self

    def score(self, x: np.ndarray) -> np.ndarray:
        return self.model.predict(x)

    def to_json(self, note: str) -> dict:
        """The trees flattened as ``rag_graphs.entity_graph.learned_rank.TreeRanker`` reads them."""
        from rag_graphs.entity_graph.candidates import FEATURES

        nodes: dict[str, list] = {key: [] for key in ("feature", "threshold", "left", "right", "value")}
        roots = flatten_trees(self.model, nodes, len(FEATURES))
        return {"kind": "trees", "note": note, "features": list(FEATURES), "roots": roots, "nodes": nodes}


def flatten_trees(model, nodes: dict[str, list], width: int, scale: float = 1.0) -> list[int]:
    """Append a fitted LightGBM model's trees to ``nodes`` in pre-order (a split's children come
    after it), every leaf times ``scale``; returns the trees' roots. ``width``: the feature count."""

    def add(node: dict) -> int:
        at = len(nodes["feature"])
        for key in nodes:
            nodes[key].append(-1 if key in ("feature", "left", "right") else 0.0)
        if "leaf_value" in node:
            nodes["value"][at] = float(node["leaf_value"]) * scale
            return at
        assert node["decision_type"] == "<=", node["decision_type"]
        nodes["feature"][at] = int(node["split_feature"])
        nodes["threshold"][at] = float(node["threshold"])
        nodes["left"][at] = add(node["left_child"])
        nodes["right"][at] = add(node["right_child"])
        return at

    dumped = model.booster_.dump_model()
    assert dumped["feature_names"] == [f"Column_{i}" for i in range(width)]
    return [add(tree["tree_structure"]) for tree in dumped["tree_info"]]


def table(rows: list[dict], rank_of) -> dict[str, dict]:
    """Per dataset: questions, R@2 / R@5 of hybrid, today, the ranker; questions lost at R@5 and R@2
    against today, and the ranker's R@2 / R@5 wins and losses against hybrid."""
    out: dict[str, dict] = {}
    for name in sorted({r["dataset"] for r in rows}):
        group = [r for r in rows if r["dataset"] == name]
        cells: dict = {"questions": len(group)}
        new = {r["id"]: rank_of(r) for r in group}
        for label, get in (
            ("hybrid", lambda r: r["hybrid"]),
            ("today", lambda r: r["today"]),
            ("ranker", lambda r, new=new: new[r["id"]]),
        ):
            cells[label] = [
                100 * statistics.mean(recall(get(r), r["gold"], k) for r in group) for k in (2, 5)
            ]
        for k, tag in ((5, "R@5"), (2, "R@2")):
            cells[f"lost {tag}"] = sum(
                recall(new[r["id"]], r["gold"], k) < recall(r["today"], r["gold"], k) for r in group
            )
            cells[f"won {tag}"] = sum(
                recall(new[r["id"]], r["gold"], k) > recall(r["today"], r["gold"], k) for r in group
            )
        out[name] = cells
    return out


def show(title: str, result: dict[str, dict]) -> None:
    print(f"\n{title}")
    print(
        "| dataset | questions | hybrid R@2 / R@5 | today R@2 / R@5 | ranker R@2 / R@5 "
        "| vs today R@5 won / lost | R@2 won / lost |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, c in result.items():
        print(
            f"| {name} | {c['questions']} | {c['hybrid'][0]:.1f} / {c['hybrid'][1]:.1f} "
            f"| {c['today'][0]:.1f} / {c['today'][1]:.1f} | {c['ranker'][0]:.1f} / {c['ranker'][1]:.1f} "
            f"| {c['won R@5']} / {c['lost R@5']} | {c['won R@2']} / {c['lost R@2']} |",
            flush=True,
        )


def folds(rows: list[dict], n: int = 5, salt: str = "") -> list[tuple[list[dict], list[dict]]]:
    """``n`` splits of ``rows`` by question id (a question is never in its own training fold);
    another ``salt``, other splits."""
    import hashlib

    part = [int(hashlib.sha1((salt + r["id"]).encode()).hexdigest()[2:6], 16) % n for r in rows]
    return [
        (
            [r for r, p in zip(rows, part, strict=True) if p != f],
            [r for r, p in zip(rows, part, strict=True) if p == f],
        )
        for f in range(n)
    ]


def cross_validated(rows: list[dict], make, protect=(0, 0), repeats: int = 1) -> dict[str, dict]:
    """Every tune question ranked by a model fitted on the other folds; with ``repeats``, the
    mean over that many different 5-fold splits (the first is the one-split figure)."""
    results = []
    for repeat in range(repeats):
        ranked: dict[str, list[str]] = {}
        for train, held in folds(rows, salt=str(repeat) if repeat else ""):
            model = make().fit([r for r in train if "pool" in r])
            for r in held:
                ranked[r["id"]] = (
                    ranked_by(r, model.score(np.asarray(r["x"])), protect) if "pool" in r else r["today"]
                )
        results.append(table(rows, lambda r, ranked=ranked: ranked[r["id"]]))
    if repeats == 1:
        return results[0]

    def mean(cells: list):
        if isinstance(cells[0], list):
            return [statistics.mean(c[i] for c in cells) for i in range(len(cells[0]))]
        return round(statistics.mean(cells), 1)

    return {
        name: {key: mean([result[name][key] for result in results]) for key in results[0][name]}
        for name in results[0]
    }


def prepare(
    rows: list[dict],
    bridge: int | None = None,
    before: bool = False,
    columns: int | None = None,
    without: tuple[str, ...] = (),
) -> list[dict]:
    """The dumped rows with hybrid's ranking; with ``bridge``, at most that many of each pool's
    bridge passages (the first, in the walk's order, as a smaller ``candidates.BRIDGE`` keeps);
    with ``before``, only the features before the bridge's (the ranker as it was); with
    ``columns``, only the first that many features; ``without``: features set to 0 (a tree never
    splits on a constant)."""
    from rag_graphs.entity_graph.candidates import FEATURES

    joined, n = FEATURES.index("bridge_joined"), FEATURES.index("bridge_log")
    n = n if before else (columns or len(FEATURES))
    for r in rows:
        if "pool" in r:
            x = np.asarray(r["x"])
            # a dump taken at a2934b2 with --page-hop lists the page hop's passages: never the pool's
            keep = np.asarray([cid not in set(r.get("page_joined", ())) for cid in r["pool"]], dtype=bool)
            if bridge is not None:
                keep &= np.cumsum(x[:, joined]) * x[:, joined] <= bridge
            r["pool"], x = [c for c, kept in zip(r["pool"], keep, strict=True) if kept], x[keep]
            for name in without:
                x[:, FEATURES.index(name)] = 0.0
            r["x"] = x[:, :n]
            r["hybrid_first"] = hybrid_first(r)
    return rows


CANDIDATES = {
    "linear pairwise C=1": lambda: Linear(1.0),
    "linear pairwise C=0.01": lambda: Linear(0.01),
    "linear pointwise C=1": lambda: Linear(1.0, pairwise=False),
    "gbm 15 leaves 200 trees": lambda: Gbm(),
    "gbm 7 leaves 100 trees": lambda: Gbm(7, 100, 0.05, 50),
    "gbm 7 leaves 200 trees min 20": lambda: Gbm(7, 200, 0.05, 20),
    "gbm 15 leaves 100 trees": lambda: Gbm(15, 100, 0.05, 50),
    "gbm 4 leaves 200 trees min 20": lambda: Gbm(4, 200, 0.05, 20),
}


SHIPPED = "gbm 7 leaves 200 trees min 20"
"""The model ``train --out`` writes: chosen on the tune halves (BENCHMARKS.md, issue 47)."""


def train(args) -> None:
    if args.before and args.out:
        sys.exit("train --before measures the features before the bridge's; it writes no ranker file")
    rows = prepare(load(args.dumps), args.bridge, args.before, args.columns, tuple(args.without or ()))
    tune = [r for r in rows if r["half"] == "tune"]
    pools = [r for r in tune if "pool" in r]
    reach = statistics.mean(recall(r["pool"], r["gold"], 1000) for r in pools)
    size = statistics.mean(len(r["pool"]) for r in pools)
    print(f"tune: {len(tune)} questions, {len(pools)} with a walk; gold in the pool {100 * reach:.1f}%")
    for name in sorted({r["dataset"] for r in pools}):
        part = [r for r in pools if r["dataset"] == name]
        print(
            f"  {name}: gold in the pool "
            f"{100 * statistics.mean(recall(r['pool'], r['gold'], 1000) for r in part):.1f}%"
            f", {statistics.mean(len(r['pool']) for r in part):.1f} candidates"
        )
    print(f"  {size:.1f} candidates a question")
    for name in args.models or list(CANDIDATES):
        for protect in [tuple(p) for p in args.protect]:
            show(
                f"5-fold on tune ({args.repeats} splits): {name}, protect {protect}",
                cross_validated(tune, CANDIDATES[name], protect, args.repeats),
            )
    if args.out:
        from rag_graphs.entity_graph.learned_rank import load_ranker

        model = CANDIDATES[SHIPPED]().fit(pools)
        note = (
            f"bench/graph_ltr.py train: LightGBM lambdarank ({SHIPPED}), fitted on the tune halves of "
            f"{', '.join(sorted({r['dataset'] for r in tune}))} ({len(pools)} questions)"
        )
        Path(args.out).write_text(json.dumps(model.to_json(note)) + "\n")
        shipped = load_ranker(Path(args.out))
        x = np.vstack([np.asarray(r["x"]) for r in rows if "pool" in r])
        assert np.allclose(shipped.score(x), model.score(x), atol=1e-9), "the flattened trees disagree"
        print(f"wrote {args.out}: its scores equal LightGBM's on every dumped candidate ({len(x)})")


def evaluate(args) -> None:
    from rag_graphs.entity_graph.learned_rank import load_ranker

    width = len(json.loads(Path(args.ranker).read_text())["features"]) if args.ranker else None
    rows = prepare(load(args.dumps), args.bridge, columns=width)
    ranker = Before(args.ranker) if args.ranker else load_ranker()
    protect = tuple(args.protect[0]) if args.protect else (0, 0)
    if args.against:  # "today" becomes that ranker file's order (e.g. the one shipped before)
        old = Before(args.against)
        for r in rows:
            if "x" in r:
                r["today"] = ranked_by(
                    {**r, "x": np.asarray(r["x"])[:, : old.n]}, old.score(np.asarray(r["x"]))
                )
    for half in ("tune", "check") if args.half == "both" else (args.half,):
        part = [r for r in rows if r["half"] == half]
        show(
            f"{half} halves, ranker {args.ranker or 'shipped'}, protect {protect}",
            table(
                part,
                lambda r: ranked_by(r, ranker.score(np.asarray(r["x"])), protect) if "x" in r else r["today"],
            ),
        )
    added = [r["ms_features"] for r in rows if "ms_features" in r]
    searched = [r["ms_search"] for r in rows]
    x = np.vstack([np.asarray(r["x"]) for r in rows if "pool" in r][:200])
    start = time.perf_counter()
    for r in [r for r in rows if "pool" in r][:200]:
        ranker.score(np.asarray(r["x"]))
    scoring = (time.perf_counter() - start) * 1000 / min(200, len(x))
    print(
        f"\ntoday's search p50 {statistics.median(searched):.1f} ms; the ranker adds p50 "
        f"{statistics.median(added):.1f} ms (vectors, features) + {scoring:.2f} ms (scoring)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--dataset", required=True)
    d.add_argument("--store", required=True)
    d.add_argument("--eval", required=True, help="the eval data folder (e.g. /work/shared/eval)")
    d.add_argument("--collection", default=None, help="default: the evaluator's name for the corpus")
    d.add_argument("--limit", type=int, default=None)
    d.add_argument("--pool", type=int, default=30, help="today's first N join the pool (candidates.POOL)")
    d.add_argument(
        "--bridge", type=int, default=10, help="the bridge hop's most passages (candidates.BRIDGE)"
    )
    d.add_argument("--out", required=True)
    q = sub.add_parser("search", help="graph search with the ranker off and on, alternating")
    q.add_argument("--dataset", required=True)
    q.add_argument("--store", required=True)
    q.add_argument("--eval", required=True)
    q.add_argument("--collection", default=None)
    q.add_argument("--split", default="check", choices=["tune", "check", "all"])
    q.add_argument("--limit", type=int, default=None)
    q.add_argument("--before", default=None, help="a third arm: this ranker file, no bridge passages")
    t = sub.add_parser("train")
    t.add_argument("dumps", nargs="+")
    t.add_argument("--models", nargs="*", default=None, choices=sorted(CANDIDATES))
    t.add_argument(
        "--protect",
        type=lambda s: [int(v) for v in s.split(",")],
        action="append",
        default=None,
        help="keep_first,keep_in_top applied after the ranker (repeatable)",
    )
    t.add_argument("--out", default=None, help="write the chosen ranker, fitted on every tune row, here")
    t.add_argument("--bridge", type=int, default=None, help="keep at most N bridge passages a pool")
    t.add_argument("--before", action="store_true", help="only the features before the bridge's")
    t.add_argument("--repeats", type=int, default=1, help="mean over this many 5-fold splits")
    t.add_argument("--columns", type=int, default=None, help="only the first N features")
    t.add_argument("--without", type=lambda s: s.split(","), default=None, help="features zeroed")
    e = sub.add_parser("evaluate")
    e.add_argument("dumps", nargs="+")
    e.add_argument("--ranker", default=None, help="a ranker file (default: the shipped one)")
    e.add_argument("--protect", type=lambda s: [int(v) for v in s.split(",")], action="append", default=None)
    e.add_argument("--bridge", type=int, default=None, help="keep at most N bridge passages a pool")
    e.add_argument("--half", default="both", choices=["tune", "check", "both"])
    e.add_argument("--against", default=None, help="compare with this ranker file's order, not today's")
    args = parser.parse_args()
    if getattr(args, "protect", None) is None and args.command == "train":
        args.protect = [[0, 0], [1, 2]]
    sys.path.insert(0, str(ROOT))
    {"dump": dump, "search": search, "train": train, "evaluate": evaluate}[args.command](args)


if __name__ == "__main__":
    main()
