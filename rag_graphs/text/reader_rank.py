"""The extract reader's second stage: regression trees that pick among the scored candidates.

The linear model (``reader_features.FEATURES`` times ``reader_weights.json``) weighs each piece of
evidence the same whatever the question: a span after "born in" counts as much for "which film"
as for "which town". Issue 51's diagnosis found the gold answer among the candidates but
outscored in about two of five HotpotQA bridge questions. Trees see the evidence *with* the
question's kind and wh-word and the span's label, and a few more signals the linear model lacks:
how many of the question's relation words (its lower-case content words: "born", "directed")
and entity words (its capitalised ones) the span's sentence holds, how much of the question the
span's passage holds and whether it is the passage holding most (the first hop), whether the span
is named in that passage (a bridge entity), how often it is mentioned, and where the linear model
placed it. Fitted on the tune halves of HotpotQA, 2Wiki and MuSiQue (gold, distractor and
open-retrieval passages) by ``bench/reader_rank.py``; BENCHMARKS.md "Round 7" has the numbers.

The trees ship as ``rag_graphs/data/reader_ranker.json`` (LightGBM lambdarank, flattened; the
file also holds the confidence threshold fitted with them) and run on numpy through
``TreeRanker``: reading needs no LightGBM. The similarity feature is the first stage's
(``reader._with_similarity``: measured for the linear contenders only), as in training.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from rag_graphs.config.errors import SetupError
from rag_graphs.entity_graph.learned_rank import TreeRanker, load_trees
from rag_graphs.text.candidates import ParsedPassage
from rag_graphs.text.reader_features import FEATURES, Candidate, content_words
from rag_graphs.text.spans import DESCRIPTION

RANKER_PATH = Path(__file__).parents[1] / "data" / "reader_ranker.json"
KINDS = ("person", "place", "date", "number", "kind", "other")
LABELS = (
    "PERSON", "GPE", "ORG", "DATE", "CARDINAL", "NORP", "LOC", "FAC", "WORK_OF_ART", "EVENT",
    "TITLE", "QUANTITY", "MONEY", "PERCENT", "PRODUCT", "LANGUAGE", "LAW", "ORDINAL", "TIME", DESCRIPTION,
)  # fmt: skip
WH = ("what", "which", "who", "whom", "whose", "where", "when", "how", "in", "the")
"""The question's first word, lower case ("in" for "In which year", "the" for "The director of")."""
CONTENDERS = {"person": 3, "place": 2, "date": 2, "number": 2}
"""How many of the linear model's best distinct answers the trees choose between, per question
kind (``FREE_KINDS`` have no bound). Unrestricted the trees scored no better on place, date and
number questions in the tune halves' 5-fold CV (place 27.4 vs 25.4 EM, date 39.4 vs 38.0), and on
short documents unlike Wikipedia's they let a span far down the linear order win ("Blue Harbour",
a title spaCy calls a person, for "In which city was Ilsa Brandt born?" where spaCy calls Aarhus a
nationality; ``tests/unit/test_reader.py``): there the linear model's type and cue features are
the surer guide. A person question's answer is the linear model's third more often: three
contenders against two scored 26.9 vs 25.6 EM (34.5 vs 32.8 F1) on the 324 tune person
question-settings, HotpotQA's open ones 23.8 vs 20.6, the same with other seeds; three for place
and date questions scored under two (place 25.4 vs 25.4 EM, 40.3 vs 41.1 F1; date 37.2 vs 38.0).
BENCHMARKS.md, issue 51 "Round 7", "Round 8" and "Round 9"."""
FREE_KINDS = frozenset({"kind", "other"})
"""Question kinds whose answer the trees choose among every candidate: organisations, works and
common nouns ("what kind of bug": moth), whose spaCy labels are spread over many kinds, so the
linear model's type features rank them poorly. In the tune halves' CV, unrestricted against two
contenders: other 15.5 vs 12.3 EM (26.2 vs 21.2 F1, 432 question-settings), kind 14.8 vs 14.8
(23.0 vs 19.7 F1, 61)."""
RANK_FEATURES = (
    *FEATURES,
    *(f"kind:{k}" for k in KINDS),
    *(f"label:{label}" for label in LABELS),
    "linear",
    "linear_gap",
    "linear_rank",
    "candidates",
    *(f"wh:{w}" for w in WH),
    "relation_words",
    "entity_words",
    "passage_words",
    "best_passage",
    "named_in_best",
    "mentions",
    "sentence_position",
    "has_relation_words",
)


@dataclass(frozen=True)
class ReaderRanker:
    """The shipped trees and the least confidence (softmax share of their scores) of an answer."""

    trees: TreeRanker
    threshold: float


def load_reader_ranker(path: Path | None = None) -> ReaderRanker:
    """The reader's trees in ``path`` (default: the shipped ``RANKER_PATH``).

    Raises:
        SetupError: the file is missing, malformed, lacks its threshold, or was written for other
            features than ``RANK_FEATURES`` (the message names the file).
    """
    path = RANKER_PATH if path is None else Path(path)
    trees, data = load_trees(path, RANK_FEATURES, "reader ranker", "bench/reader_rank.py --out")
    threshold = data.get("threshold")
    if not isinstance(threshold, int | float) or not 0 <= threshold < 1:
        raise SetupError(
            f"reader ranker file {path}: 'threshold' must be a number in [0, 1), not {threshold!r}"
        )
    return ReaderRanker(trees, float(threshold))


@cache
def shipped_reader_ranker() -> ReaderRanker:
    """The shipped trees, read once per process."""
    return load_reader_ranker()


def tree_scores(
    question: str,
    kind: str,
    passages: Sequence[ParsedPassage],
    candidates: Sequence[Candidate],
    linear: np.ndarray,
) -> tuple[np.ndarray, float]:
    """The shipped trees' score of each candidate, and the least confidence of an answer. Unless
    the question's ``kind`` is one of ``FREE_KINDS``, only the linear model's best distinct answers
    (``CONTENDERS`` of the kind) can win: the others' scores are held just under the lowest
    contender's, so they still weigh in the confidence (a softmax share) as the trees see them, up
    to that cap."""
    ranker = shipped_reader_ranker()
    scores = ranker.trees.score(rank_matrix(question, kind, passages, candidates, linear))
    return held_to_contenders(kind, [c.key for c in candidates], linear, scores), ranker.threshold


def top_share(keys: Sequence[str], scores: np.ndarray) -> tuple[int, float]:
    """The highest-scoring row and its confidence: its softmax share among the distinct answers
    (``keys``: a span found several times counts once, at its best score)."""
    best: dict[str, int] = {}
    for i, key in enumerate(keys):
        if key not in best or scores[i] > scores[best[key]]:
            best[key] = i
    distinct = np.asarray([scores[i] for i in best.values()])
    top = max(best.values(), key=lambda i: scores[i])
    return top, float(1.0 / np.exp(distinct - distinct.max()).sum())


def held_to_contenders(kind: str, keys: Sequence[str], linear: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """``scores`` with every answer (``keys``) outside the linear model's ``CONTENDERS[kind]`` best
    distinct ones held just under the lowest contender's score; as they are for ``FREE_KINDS``."""
    if kind in FREE_KINDS:
        return scores
    best: dict[str, float] = {}
    for key, score in zip(keys, linear, strict=True):
        best[key] = max(score, best.get(key, -np.inf))
    kept = set(sorted(best, key=lambda key: -best[key])[: CONTENDERS.get(kind, 2)])
    contender = np.asarray([key in kept for key in keys])
    cap = scores[contender].min() - 1e-6
    return np.where(contender, scores, np.minimum(scores, cap))


def rank_matrix(
    question: str,
    kind: str,
    passages: Sequence[ParsedPassage],
    candidates: Sequence[Candidate],
    linear: np.ndarray,
) -> np.ndarray:
    """One row of ``RANK_FEATURES`` per candidate; ``linear`` is the first stage's scores."""
    x = np.asarray([c.features for c in candidates], dtype=float)
    n = len(candidates)
    order = np.argsort(-linear, kind="stable")
    place = np.empty(n)
    place[order] = np.arange(n)
    kinds = np.tile([float(kind == k) for k in KINDS], (n, 1))
    labels = np.asarray([[float(c.label == label) for label in LABELS] for c in candidates])
    first = np.stack([linear, linear - linear.max(), 1 / (1 + place), np.full(n, n / 50)], axis=1)
    return np.hstack([x, kinds, labels, first, _question_signals(question, passages, candidates)])


def _question_signals(
    question: str, passages: Sequence[ParsedPassage], candidates: Sequence[Candidate]
) -> np.ndarray:
    """The wh-word, and how the span's sentence and passage hold the question's relation words
    (lower case) and entity words (capitalised after the first word)."""
    words = question.split()
    wh = [float(bool(words) and words[0].lower() == w) for w in WH]
    entity = content_words(" ".join(w for w in words[1:] if w[:1].isupper()))
    every = content_words(question)
    relation = every - entity
    said = [content_words(p.title + " " + " ".join(s.text for s in p.sentences)) for p in passages]
    share = [len(every & w) / max(len(every), 1) for w in said]
    best = int(np.argmax(share)) if share else -1
    lowered = [" ".join(s.text for s in p.sentences).lower() for p in passages]
    titles = [content_words(p.title) for p in passages]
    sentences: dict[tuple[int, int], frozenset[str]] = {}  # many candidates share a sentence
    rows = []
    for c in candidates:
        at = (c.doc_index, c.sentence)
        if at not in sentences:
            sentences[at] = content_words(passages[c.doc_index].sentences[c.sentence].text)
        sentence = sentences[at]
        span = c.text.lower()
        rows.append(
            [
                *wh,
                len(relation & sentence) / max(len(relation), 1),
                len(entity & (sentence | titles[c.doc_index])) / max(len(entity), 1),
                share[c.doc_index],
                float(c.doc_index == best),
                float(c.doc_index != best and span in lowered[best]),
                min(sum(text.count(span) for text in lowered), 10) / 10,
                min(c.sentence, 10) / 10,
                float(bool(relation)),
            ]
        )
    return np.asarray(rows, dtype=float).reshape(len(candidates), len(WH) + 8)
