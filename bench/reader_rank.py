"""Fit and measure the extract reader's trees (``rag_graphs.text.reader_rank``) on the dev halves.

Three settings per question: ``oracle`` and ``distractor`` (its own passages, as
``bench/reader_fit.py`` builds them) and ``open`` (the passages open retrieval returned: the final
``documents`` of an evaluator run of ``naive`` over the dataset's store, read back from it; make
them with ``bench/reader.py --split all --limit 2000 --readers extract``). Every candidate gets
its ``RANK_FEATURES`` row exactly as ``reader.read`` computes it (the first stage's similarity
included), and is right when it is the gold answer or an alias (SQuAD normalisation).

    # 1. the candidates of every question, once (pickled; spaCy's entities and MiniLM's vectors cached)
    PYTHONPATH=. .venv/bin/python bench/reader_rank.py collect --runs bench_runs/open_all \
        --stores bench_runs/stores --cache bench_runs/cache --out bench_runs/rank_candidates
    # 2. 5-fold CV on the tune halves against the linear model; with --out, fit on every tune
    #    question, choose the threshold on tune, and write the shipped file
    PYTHONPATH=. .venv/bin/python bench/reader_rank.py fit bench_runs/rank_candidates \
        --out rag_graphs/data/reader_ranker.json
    # 3. the shipped file on both halves, per dataset and setting
    PYTHONPATH=. .venv/bin/python bench/reader_rank.py evaluate bench_runs/rank_candidates

The model: LightGBM lambdarank (binary relevance), 7 leaves, 100 trees, 5 bagged seeds (their
trees in one file, each leaf divided by 5: the mean of the five). ``evaluate`` scores as ``read``
does: the trees choose among the linear model's ``CONTENDERS`` best answers (three for a person
question, two for a place, date or number one; among all of them for ``FREE_KINDS``). The
threshold: the highest softmax share under which abstaining on every tune-half span answer loses
at most 0.01 F1 a question, as ``reader_fit.py`` chooses the linear model's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import statistics
import sys
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import reader_fit  # noqa: E402

from rag_graphs.eval.halves import half_of  # noqa: E402
from rag_graphs.eval.metrics import exact_match, f1_score  # noqa: E402
from rag_graphs.text import candidates as candidates_module  # noqa: E402
from rag_graphs.text import reader  # noqa: E402
from rag_graphs.text.answer_types import answer_type  # noqa: E402
from rag_graphs.text.reader_features import asked_in, candidate_features  # noqa: E402
from rag_graphs.text.reader_rank import RANK_FEATURES, held_to_contenders, rank_matrix, top_share  # noqa: E402
from rag_graphs.text.roles import ABOUT_THEM, unresolved_role  # noqa: E402

JOBS = (
    ("hotpotqa", ("oracle", "distractor", "open")),
    ("2wikimultihopqa", ("oracle", "distractor")),
    ("2wikimultihopqa_hippocorpus", ("open",)),
    ("musique", ("oracle", "distractor", "open")),
)
SEEDS = 5


def open_documents(dataset: str, runs: Path, stores: Path) -> dict[str, list]:
    """Per question id, the open run's final passages read back from its store, in rank order."""
    from rag_graphs.config.context import RagContext
    from rag_graphs.eval import read_rows
    from rag_graphs.eval.corpus import collection_name
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.search.retrieval import embeddings_for
    from rag_graphs.store import open_index

    ctx = RagContext()
    loaded = load_dataset(reader_fit.eval_dir() / dataset)
    index = open_index(
        str(stores / f"reader_{dataset}.db"), collection_name(loaded, ctx.embeddings), embeddings_for(ctx)
    )
    found = {}
    for row in read_rows(runs / f"{dataset}-all"):
        by_id = {str(d.id): d for d in index.get(row["retrieved_ids"])} if row["retrieved_ids"] else {}
        found[row["id"]] = [by_id[i] for i in row["retrieved_ids"] if i in by_id]
    return found


def collect(args) -> None:
    """One pickle per dataset and setting: each question's rank rows, candidates and the reading."""
    args.out.mkdir(parents=True, exist_ok=True)
    args.cache.mkdir(parents=True, exist_ok=True)
    parses = args.cache / "parses.pkl"
    if parses.exists():
        candidates_module._CACHE.update(pickle.loads(parses.read_bytes()))
    candidates_module.CACHE_SIZE = 10**7
    from rag_graphs.store.embeddings import load_embeddings

    embeddings = reader_fit.CachedEmbeddings(load_embeddings(), args.cache / "embeddings.pkl")
    weights = reader.load_weights()
    for dataset, settings in JOBS:
        rows = reader_fit.load_rows(reader_fit.eval_dir(), dataset)
        for setting in settings:
            opened = open_documents(dataset, args.runs, args.stores) if setting == "open" else {}
            records = []
            for row in rows:
                docs = opened.get(row["id"], []) if setting == "open" else reader_fit.documents(row, setting)
                records.append(_record(row, docs, embeddings, weights))
            (args.out / f"{dataset}-{setting}.pkl").write_bytes(pickle.dumps(records))
            print(f"{dataset} {setting}: {len(records)} questions", flush=True)
        embeddings.save()
        parses.write_bytes(pickle.dumps(dict(candidates_module._CACHE)))


def _record(row: dict, docs: list, embeddings, weights) -> dict:
    question, golds = row["question"], reader_fit.golds(row)
    typed = answer_type(question)
    record = {"id": row["id"], "half": half_of(row["id"]), "question": question, "golds": golds, "x": None}
    record["kind"] = typed.kind
    found: list = []
    if docs and typed.kind not in ("which_of_two", "yes_no"):
        passages = reader.parsed_documents(docs, question)
        unasked = not asked_in(question, passages)
        if not (unasked or (typed.kind in ABOUT_THEM and unresolved_role(question, passages))):
            found = candidate_features(question, typed, passages, {})
    if not found:  # the reader's rules answer (or abstain): no rows to rank
        got = reader.read(question, docs, embeddings=embeddings, rerank=False, threshold=0.0)
        record.update(
            rule=(exact_match(got.answer, golds), f1_score(got.answer, golds)), rule_confidence=got.confidence
        )
        return record
    found = reader._with_similarity(question, passages, found, embeddings, weights)
    linear = np.asarray([c.features for c in found]) @ np.asarray(weights.weights)
    answers = [reader.answer_text(question, c.text) for c in found]
    record.update(
        x=rank_matrix(question, typed.kind, passages, found, linear),
        linear=linear,
        keys=[c.key for c in found],
        answers=answers,
        em=np.asarray([exact_match(a, golds) for a in answers]),
        f1=np.asarray([f1_score(a, golds) for a in answers]),
    )
    return record


def load(folder: Path) -> dict[str, list[dict]]:
    return {path.stem: pickle.loads(path.read_bytes()) for path in sorted(folder.glob("*.pkl"))}


def pick(record: dict, scores: np.ndarray) -> tuple[int, float]:
    """``reader.best_scored`` over a record: the winner's row and its softmax share."""
    return top_share(record["keys"], scores)


def quality(records: list[dict], score, threshold: float) -> tuple[float, float, int]:
    """EM and F1 (points) of the reader with ``score`` picking, abstaining under ``threshold``."""
    em, f1 = [], []
    for r in records:
        if r["x"] is None:
            em.append(r["rule"][0])
            f1.append(r["rule"][1])
            continue
        top, share = pick(r, score(r))
        right = share >= threshold
        em.append(r["em"][top] * right)
        f1.append(r["f1"][top] * right)
    return 100 * statistics.fmean(em), 100 * statistics.fmean(f1), len(records)


def fit_trees(records: list[dict], seed: int):
    import lightgbm

    usable = [r for r in records if r["x"] is not None and r["em"].any()]
    model = lightgbm.LGBMRanker(
        objective="lambdarank", n_estimators=100, num_leaves=7, learning_rate=0.05, min_child_samples=20,
        subsample=0.8, subsample_freq=1, colsample_bytree=0.8, random_state=seed, n_jobs=1,
        deterministic=True, force_row_wise=True, verbose=-1,
    )  # fmt: skip
    model.fit(
        np.vstack([r["x"] for r in usable]),
        np.concatenate([r["em"] for r in usable]),
        group=[len(r["em"]) for r in usable],
    )
    return model


def bagged(records: list[dict]):
    models = [fit_trees(records, seed) for seed in range(SEEDS)]
    return models, lambda r: sum(m.predict(r["x"]) for m in models) / len(models)


def threshold_on(records: list[dict], score, cost: float = 0.01) -> float:
    """``reader_fit``'s rule for the trees' confidence (softmax share of their scores)."""
    pairs = []
    for r in records:
        if r["x"] is not None:
            top, share = pick(r, score(r))
            pairs.append((share, float(r["f1"][top])))
    return reader_fit.least_costly(pairs, cost)


def linear_score(record: dict) -> np.ndarray:
    return record["linear"]


def fit(args) -> None:
    data = load(args.folder)
    tune = {name: [r for r in rows if r["half"] == "tune"] for name, rows in data.items()}
    fold = lambda r: hashlib.md5(r["id"].encode()).digest()[0] % 5  # noqa: E731
    held: dict[str, list] = defaultdict(list)
    for f in range(5):
        _, score = bagged([r for rows in tune.values() for r in rows if fold(r) != f])
        for name, rows in tune.items():
            held[name].append(([r for r in rows if fold(r) == f], score))
    linear_threshold = reader.load_weights().threshold
    print(f"{'tune, 5-fold CV (trees: any candidate)':34} {'linear EM/F1':>14} {'trees EM/F1':>14}")
    for name, parts in held.items():
        sums = [quality(rows, score, 0.0) for rows, score in parts]
        n = sum(s[2] for s in sums)
        trees = (sum(s[0] * s[2] for s in sums) / n, sum(s[1] * s[2] for s in sums) / n)
        base = quality(tune[name], linear_score, linear_threshold)
        print(f"{name:34} {base[0]:6.1f}/{base[1]:5.1f}  {trees[0]:6.1f}/{trees[1]:5.1f}")
    if args.out:
        models, score = bagged([r for rows in tune.values() for r in rows])
        held = lambda r: held_to_contenders(r["kind"], r["keys"], r["linear"], score(r))  # noqa: E731
        threshold = threshold_on([r for rows in tune.values() for r in rows], held)
        write(models, threshold, args.out, sum(len(rows) for rows in tune.values()))
        from rag_graphs.text.reader_rank import load_reader_ranker

        shipped = load_reader_ranker(args.out)
        x = np.vstack([r["x"] for rows in data.values() for r in rows if r["x"] is not None])
        assert np.allclose(shipped.trees.score(x), sum(m.predict(x) for m in models) / len(models), atol=1e-9)
        print(f"wrote {args.out} (threshold {threshold}): scores = LightGBM's on {len(x)} rows")


def write(models: list, threshold: float, out: Path, questions: int) -> None:
    """The bagged trees flattened as ``TreeRanker`` reads them (pre-order), leaves divided by the bag."""
    from graph_ltr import flatten_trees

    nodes: dict[str, list] = {key: [] for key in ("feature", "threshold", "left", "right", "value")}
    roots: list[int] = []
    for model in models:
        roots += flatten_trees(model, nodes, len(RANK_FEATURES), scale=1 / len(models))
    note = (
        f"bench/reader_rank.py fit: LightGBM lambdarank, {len(models)} bagged seeds, tune halves "
        f"({questions} question-settings of hotpotqa, 2wikimultihopqa(+hippocorpus), musique)"
    )
    payload = {
        "kind": "trees",
        "note": note,
        "features": list(RANK_FEATURES),
        "threshold": threshold,
        "roots": roots,
        "nodes": nodes,
    }
    out.write_text(json.dumps(payload) + "\n", encoding="utf-8")


def shipped(ranker, record: dict) -> np.ndarray:
    """The shipped trees' scores of ``record``'s candidates, held as ``read`` holds them."""
    return held_to_contenders(
        record["kind"], record["keys"], record["linear"], ranker.trees.score(record["x"])
    )


def evaluate(args) -> None:
    from rag_graphs.text.reader_rank import shipped_reader_ranker

    ranker = shipped_reader_ranker()
    linear_threshold = reader.load_weights().threshold
    print(f"{'dataset-setting':34} {'half':5} {'n':>4} {'linear EM/F1':>14} {'trees EM/F1':>14}")
    for name, rows in load(args.folder).items():
        for half in ("tune", "check"):
            part = [r for r in rows if r["half"] == half]
            base = quality(part, linear_score, linear_threshold)
            trees = quality(part, lambda r: shipped(ranker, r), ranker.threshold)
            print(
                f"{name:34} {half:5} {len(part):4} {base[0]:6.1f}/{base[1]:5.1f}"
                f"  {trees[0]:6.1f}/{trees[1]:5.1f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("collect")
    one.add_argument("--runs", type=Path, required=True, help="evaluator run folders <dataset>-all")
    one.add_argument("--stores", type=Path, required=True, help="folder of reader_<dataset>.db stores")
    one.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "rag-graphs-reader")
    one.add_argument("--out", type=Path, required=True)
    two = sub.add_parser("fit")
    two.add_argument("folder", type=Path)
    two.add_argument("--out", type=Path)
    three = sub.add_parser("evaluate")
    three.add_argument("folder", type=Path)
    args = parser.parse_args()
    {"collect": collect, "fit": fit, "evaluate": evaluate}[args.command](args)


if __name__ == "__main__":
    main()
