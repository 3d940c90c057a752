"""Answer and retrieval metrics: the standard ones, so numbers compare with papers.

Answer normalisation is SQuAD/HotpotQA's (lower case, no punctuation, no
articles, single spaces); a prediction scores the best over the gold answer
and its aliases. Supporting-passage recall asks whether the method retrieved
the gold passages at all, the ceiling for any answer built on them.

EM and F1 score the short answer (``rag_graphs.text.answers.short_answer``: the first
line, which answer prompts reserve for it), FlashRAG's convention; "contains"
reads the whole answer, explanation included.
"""

from __future__ import annotations

import random
import re
import string
from collections import Counter
from collections.abc import Collection, Iterable, Sequence

from rag_graphs.text.answers import short_answer

RANKS = (2, 5)
"""The k of the R@k the evaluator reports (``recall_at_2``, ``recall_at_5``): HippoRAG's columns."""

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, punctuation and articles removed, whitespace collapsed."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    """1.0 when the normalised prediction equals a normalised gold answer."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in golds))


def _f1(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    # yes/no/noanswer only match exactly (HotpotQA's official rule).
    if pred in ("yes", "no", "noanswer") or ref in ("yes", "no", "noanswer"):
        return float(pred == ref)
    pred_tokens, ref_tokens = pred.split(), ref.split()
    common = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred_tokens), common / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, golds: Sequence[str]) -> float:
    """Token F1 against the best-matching gold answer."""
    return max((_f1(prediction, g) for g in golds), default=0.0)


def answer_contained(prediction: str, golds: Sequence[str]) -> float:
    """1.0 when a normalised gold answer appears inside the normalised prediction.

    Fairer than EM for chatty models that answer in a sentence.
    """
    pred = f" {normalize_answer(prediction)} "
    return float(any(f" {normalize_answer(g)} " in pred for g in golds if normalize_answer(g)))


def answer_scores(prediction: str, golds: Sequence[str]) -> dict[str, float | str]:
    """A prediction's answer metrics: EM and F1 of its short answer, "contains" over all of it.

    ``short`` is the text EM and F1 scored, kept in the row so a reader sees what was compared.
    """
    short = short_answer(prediction)
    return {
        "short": short,
        "em": exact_match(short, golds),
        "f1": f1_score(short, golds),
        "contains": answer_contained(prediction, golds),
    }


def supporting_recall(retrieved: Iterable[str], gold: Iterable[str]) -> float | None:
    """Share of gold passage ids among the retrieved ids (None when there is no gold).

    Gold ids are a set: a repeated gold id counts once.
    """
    golds = set(gold)
    if not golds:
        return None
    return len(golds & set(retrieved)) / len(golds)


def recall_at_k(ranked_ids: Sequence[str | Collection[str]], gold: Iterable[str], k: int) -> float | None:
    """R@k, the papers' passage recall: |gold ∩ top-k| / |gold| (None when there is no gold).

    ``ranked_ids`` is the ranking, best first. A position is one id, or the several
    names of one passage (its chunk id and its source file name, as the evaluator
    passes them), any of which may match a gold id. A repeated position counts once
    and takes no place in the top k; a ranking shorter than ``k`` is read whole.
    Gold ids are a set, as in ``supporting_recall``, which R@k equals once ``k``
    covers the ranking.

    Raises:
        ValueError: ``k`` below 1.
    """
    if k < 1:
        raise ValueError(f"R@k needs k >= 1, got {k}")
    golds = set(gold)
    if not golds:
        return None
    seen: set[frozenset[str]] = set()
    top: set[str] = set()
    for position in ranked_ids:
        names = frozenset((position,) if isinstance(position, str) else position)
        if names in seen:
            continue
        seen.add(names)
        top |= names
        if len(seen) == k:
            break
    return len(golds & top) / len(golds)


def bootstrap_ci(
    values: Sequence[float], *, resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean (seeded, so reports are reproducible)."""
    if not values:
        return (float("nan"), float("nan"))
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(resamples))
    tail = (1 - level) / 2
    return means[int(tail * resamples)], means[min(resamples - 1, int((1 - tail) * resamples))]
