"""Fit and measure the extractive reader (``rag_graphs.text.reader``) without a store.

Two settings per question, both from the question's own passages in ``dev.jsonl``:
``oracle`` (the gold supporting passages only, in their gold order) and ``distractor`` (the
gold passages first, then the others, top 5). Retrieval is not measured here: the open
setting (graph search, k=5) is ``rag-graphs eval --reader extract``.

    .venv/bin/python bench/reader_fit.py --fit            # refit weights on the TUNE halves, write them
    .venv/bin/python bench/reader_fit.py                  # measure the shipped weights, tune vs check
    .venv/bin/python bench/reader_fit.py --timing 60      # ms per question, cold parse cache
    .venv/bin/python bench/reader_fit.py --threshold-only # shipped weights, threshold re-chosen on tune

Fitting: every candidate span of a tune-half question gets its feature vector
(``reader_features.FEATURES``); a span is right when it exactly matches the gold answer or an
alias (SQuAD normalisation). The weights maximise the log-likelihood of the right spans under a
softmax over each question's candidates (L2 ``--l2``), by gradient ascent, on the tune halves of
HotpotQA, 2Wiki and MuSiQue pooled, both settings. Which-of-two and yes/no questions are decided
by rules (``text.comparisons``) and take no part in the fit. The threshold is the highest
confidence under which abstaining on every tune-half span answer loses at most
``--abstain-cost`` F1 per question (0.01: one point): ``no_evidence`` replaces wrong guesses.

Sentences' spaCy entities and sentence embeddings are cached on disk (``--cache``) between runs.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402

from rag_graphs.eval.halves import half_of  # noqa: E402
from rag_graphs.eval.metrics import answer_scores, normalize_answer  # noqa: E402
from rag_graphs.text import candidates as candidates_module  # noqa: E402
from rag_graphs.text import reader  # noqa: E402
from rag_graphs.text.answer_types import answer_type  # noqa: E402
from rag_graphs.text.reader_features import FEATURES, candidate_features  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATASETS = ("hotpotqa", "2wikimultihopqa", "musique")
SETTINGS = ("oracle", "distractor")
TOP = 5


def eval_dir() -> Path:
    for path in (ROOT.parent / "shared" / "eval", ROOT.parents[1] / "shared" / "eval"):
        if path.is_dir():
            return path
    raise SystemExit("no shared/eval folder next to the project: pass --data")


class CachedEmbeddings(Embeddings):
    """The run's embedder with a text -> vector memo, saved between runs."""

    def __init__(self, inner: Embeddings, path: Path):
        self.inner, self.path = inner, path
        self.memo: dict[str, list[float]] = pickle.loads(path.read_bytes()) if path.exists() else {}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if missing:
            self.memo.update(zip(missing, self.inner.embed_documents(missing), strict=True))
        return [self.memo[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    def save(self) -> None:
        self.path.write_bytes(pickle.dumps(self.memo))


def load_rows(data: Path, name: str) -> list[dict]:
    with (data / name / "dev.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def documents(row: dict, setting: str) -> list[Document]:
    """The setting's passages as stored chunks are (the title on the first line)."""
    by_id = {p["id"]: p for p in row["passages"]}
    gold = [by_id[i] for i in row.get("supporting_ids") or [] if i in by_id]
    chosen = gold if setting == "oracle" else (gold + [p for p in row["passages"] if p not in gold])[:TOP]
    return [
        Document(
            page_content=f"{p.get('title') or ''}\n{p['text']}", metadata={"title": p.get("title") or ""}
        )
        for p in chosen
    ]


def golds(row: dict) -> list[str]:
    return [row["answer"], *(row.get("answer_aliases") or [])]


def question_type(row: dict) -> str:
    return str(row.get("type") or "")


def fit(
    groups: list[tuple[np.ndarray, np.ndarray]], l2: float, steps: int = 400, rate: float = 0.5
) -> np.ndarray:
    """Weights maximising sum over questions of log(sum of softmax shares of the right spans)."""
    w = np.zeros(len(FEATURES))
    for _ in range(steps):
        grad = -l2 * w
        for x, y in groups:
            scores = x @ w
            p = np.exp(scores - scores.max())
            p /= p.sum()
            q = p * y
            q /= q.sum()
            grad += (q - p) @ x
        w += rate * grad / len(groups)
    return w


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--limit", type=int, default=0, help="questions per dataset at most (0: all)")
    parser.add_argument("--fit", action="store_true", help="refit on the tune halves and write the weights")
    parser.add_argument(
        "--threshold-only",
        action="store_true",
        help="keep the shipped weights, re-choose the threshold on the tune halves and write it",
    )
    parser.add_argument("--l2", type=float, default=0.01)
    parser.add_argument("--abstain-cost", type=float, default=0.01, help="F1 abstaining may lose")
    parser.add_argument("--no-embeddings", action="store_true")
    parser.add_argument("--timing", type=int, default=0, help="time read() on N distractor questions, cold")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "rag-graphs-reader")
    parser.add_argument("--out", type=Path, default=None, help="write the per-question rows here (JSONL)")
    args = parser.parse_args()
    data = args.data or eval_dir()
    args.cache.mkdir(parents=True, exist_ok=True)
    parses = args.cache / "parses.pkl"
    if parses.exists():  # sentence text -> entities (a cache of whole passages, before 0eb97f5, is skipped)
        cached = pickle.loads(parses.read_bytes())
        candidates_module._CACHE.update({k: v for k, v in cached.items() if isinstance(k, str)})
    candidates_module.CACHE_SIZE = 10**7
    embeddings = None
    if not args.no_embeddings:
        from rag_graphs.store.embeddings import load_embeddings

        embeddings = CachedEmbeddings(load_embeddings(), args.cache / "embeddings.pkl")

    def save() -> None:
        parses.write_bytes(pickle.dumps(dict(candidates_module._CACHE)))
        if embeddings is not None:
            embeddings.save()

    rows = {name: load_rows(data, name)[: args.limit or None] for name in args.datasets.split(",") if name}
    if args.timing:
        time_reads(rows, args.timing, None if embeddings is None else embeddings.inner)
    if args.fit:
        weights = fit_weights(rows, embeddings, args.l2, save)
        reader.load_weights.cache_clear()
        threshold = choose_threshold(rows, embeddings, args.abstain_cost)
        write_weights(weights, threshold, args)
        reader.load_weights.cache_clear()
    elif args.threshold_only:
        shipped = reader.load_weights()
        threshold = choose_threshold(rows, embeddings, args.abstain_cost)
        print(f"threshold {shipped.threshold} -> {threshold}", flush=True)
        note = (
            f" Weights kept, threshold re-chosen by --threshold-only --limit {args.limit}"
            f" (was {shipped.threshold})."
        )
        write_weights(np.asarray(shipped.weights), threshold, args, note)
        reader.load_weights.cache_clear()
    report(rows, embeddings, args.out)
    save()


def fit_weights(rows: dict[str, list[dict]], embeddings, l2: float, save) -> np.ndarray:
    groups = []
    for name, questions in rows.items():
        for row in questions:
            if half_of(row["id"]) != "tune":
                continue
            typed = answer_type(row["question"])
            if typed.kind in ("which_of_two", "yes_no"):
                continue
            wanted = {normalize_answer(g) for g in golds(row)}
            for setting in SETTINGS:
                passages = reader.parsed_documents(documents(row, setting))
                sims = reader.sentence_similarities(row["question"], passages, embeddings)
                found = candidate_features(row["question"], typed, passages, sims)
                y = np.asarray([normalize_answer(c.text) in wanted for c in found], dtype=float)
                if found and y.any():
                    groups.append((np.asarray([c.features for c in found]), y))
        save()
        print(f"{name}: {len(groups)} tune groups with a right candidate so far", flush=True)
    w = fit(groups, l2)
    print("weights:", json.dumps(dict(zip(FEATURES, np.round(w, 3).tolist(), strict=True))), flush=True)
    return w


def choose_threshold(rows, embeddings, cost: float) -> float:
    """The highest confidence under which tune-half span answers, all abstained, would cost at most
    ``cost`` F1 per question: ``no_evidence`` then replaces mostly-wrong guesses only."""
    pairs = []
    for questions in rows.values():
        for row in questions:
            if half_of(row["id"]) != "tune":
                continue
            for setting in SETTINGS:
                docs = documents(row, setting)
                got = reader.read(row["question"], docs, embeddings=embeddings, threshold=0.0)
                if got.answer_type not in ("which_of_two", "yes_no") and not got.no_evidence:
                    pairs.append((got.confidence, answer_scores(got.answer, golds(row))["f1"]))
    return least_costly(pairs, cost)


def least_costly(pairs: list[tuple[float, float]], cost: float) -> float:
    """The highest confidence under which abstaining on every (confidence, F1) answer of ``pairs``
    loses at most ``cost`` F1 per answer."""
    threshold, lost = 0.0, 0.0
    for confidence, f1 in sorted(pairs):
        lost += f1
        if lost > cost * len(pairs):
            break
        threshold = confidence
    return round(threshold, 4)


def write_weights(w: np.ndarray, threshold: float, args, note: str = "") -> None:
    payload = {
        "_how": (
            "Fitted by bench/reader_fit.py --fit on the TUNE halves (rag_graphs.eval.halves) of "
            f"{args.datasets}, oracle and distractor settings pooled: softmax over each question's "
            f"candidates, L2 {args.l2}; threshold: the highest confidence under which abstaining on every "
            f"tune answer loses at most {args.abstain_cost} F1 per question." + note
        ),
        "weights": dict(zip(FEATURES, [round(float(v), 4) for v in w], strict=True)),
        "threshold": threshold,
    }
    reader.WEIGHTS_PATH.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {reader.WEIGHTS_PATH}", flush=True)


def report(rows, embeddings, out: Path | None) -> None:
    table: dict[tuple, list[dict]] = defaultdict(list)
    lines = []
    for name, questions in rows.items():
        for row in questions:
            half = half_of(row["id"])
            for setting in SETTINGS:
                got = reader.read(row["question"], documents(row, setting), embeddings=embeddings)
                scores = answer_scores(got.answer, golds(row))
                record = {
                    "em": scores["em"],
                    "f1": scores["f1"],
                    "contains": scores["contains"],
                    "abstain": float(got.no_evidence),
                }
                for kind in ("all", question_type(row), f"reader:{got.answer_type}"):
                    table[(name, setting, half, kind)].append(record)
                lines.append(
                    {
                        "dataset": name,
                        "setting": setting,
                        "half": half,
                        "id": row["id"],
                        "question": row["question"],
                        "gold": row["answer"],
                        "answer": got.answer,
                        "type": got.answer_type,
                        "confidence": round(got.confidence, 3),
                        **scores,
                    }
                )
    header = ("dataset", "setting", "half", "type", "n", "EM", "F1", "cont", "abst")
    print("\n{:16} {:10} {:5} {:24} {:>4} {:>5} {:>5} {:>5} {:>5}".format(*header))
    for key in sorted(table):
        records = table[key]
        mean = {m: 100 * statistics.fmean(r[m] for r in records) for m in ("em", "f1", "contains", "abstain")}
        print(
            f"{key[0]:16} {key[1]:10} {key[2]:5} {key[3]:24} {len(records):4} "
            f"{mean['em']:5.1f} {mean['f1']:5.1f} {mean['contains']:5.1f} {mean['abstain']:5.1f}"
        )
    if out:
        out.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def time_reads(rows, n: int, embeddings) -> None:
    """ms per read() on the first ``n`` distractor questions of each set, nothing cached: wall
    clock and this process's CPU time (all its threads), with and without the embedder."""
    saved = dict(candidates_module._CACHE)
    reader.read("warm up?", [Document(page_content="Warm up.", metadata={})], embeddings=embeddings)
    for model in (None, embeddings) if embeddings is not None else (None,):
        candidates_module._CACHE.clear()
        wall, cpu = [], []
        for questions in rows.values():
            for row in questions[:n]:
                docs = documents(row, "distractor")
                started, started_cpu = time.perf_counter(), time.process_time()
                reader.read(row["question"], docs, embeddings=model)
                wall.append(1000 * (time.perf_counter() - started))
                cpu.append(1000 * (time.process_time() - started_cpu))
        label = "with the embedder" if model is not None else "without an embedder"
        print(
            f"read() {label}: {len(wall)} questions, wall median {statistics.median(wall):.1f} ms "
            f"(mean {statistics.fmean(wall):.1f}), CPU median {statistics.median(cpu):.1f} ms "
            f"(mean {statistics.fmean(cpu):.1f})",
            flush=True,
        )
    candidates_module._CACHE.clear()
    candidates_module._CACHE.update(saved)


if __name__ == "__main__":
    main()
