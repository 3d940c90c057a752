"""The extractive reader: a typed, cited short answer picked from the retrieved passages, no chat model.

The embedded chat model (SmolLM2-135M) handed the gold passages gets 0 of 100 HotpotQA and
2Wiki answers exactly right (issue 51): retrieval found the evidence, the generator threw it
away. This reader answers the way extractive QA systems did before generators: it types
the question (``answer_types``), proposes the spans of the passages that could be the answer
(``candidates``), scores each with evidence features and a linear model, lets regression trees
pick among them (``reader_rank``), and returns the best span with the sentence it stands on.
Which-of-two and yes/no questions are decided by the two items' dates or numbers (``comparisons``),
what two named items share by both their passages (``shared``).

The features (``FEATURES``) are what a person checks: is the span of the asked type, is
it not a restatement of the question, does its sentence hold the question's words and
near it, is the sentence like the question (cosine with the run's embedding model, when
given), is the passage ranked high, do other passages agree, and for a bridge question
is its passage the one a question-like sentence elsewhere leads to. The weights
(``rag_graphs/data/reader_weights.json``) and the trees were fitted on the tune halves of the
dev sets by ``bench/reader_fit.py`` and ``bench/reader_rank.py``.

A candidate's confidence is its softmax share of all candidates' scores; under the threshold
(or with no candidate at all) the reading is ``no_evidence`` with the reason, not a guess.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from rag_graphs.store.reads import embed_queries
from rag_graphs.text import reader_features
from rag_graphs.text.answer_types import ASKS_YEAR, YEAR, AnswerType, answer_type
from rag_graphs.text.candidates import ParsedPassage, Selector, parse_passages, split_title, stems
from rag_graphs.text.comparisons import compare_options, polar_answer
from rag_graphs.text.reader_features import FEATURES, HEADING, Candidate, candidate_features, content_words
from rag_graphs.text.reader_rank import top_share, tree_scores
from rag_graphs.text.roles import ABOUT_THEM, QUALIFIER, unresolved_role
from rag_graphs.text.shared import shared_answer

WEIGHTS_PATH = Path(__file__).parents[1] / "data" / "reader_weights.json"
MAX_SIMILARITY_SENTENCES = 16
"""Sentences whose similarity is measured per question at most (the ones with the most question
words); of those, only the contenders' are embedded (``_with_similarity``)."""
COSINE_SPREAD = 1.3
"""How far apart two sentences' cosines with one question are taken to be at most
(``_with_similarity``'s reach): 2 in principle, 1.30 the widest seen with MiniLM (cosines of 792 dev
questions with 10,793 dev sentences run from -0.32 to 0.98) and the smallest spread under which no
tune-half answer differs from the 2's (``bench/reader_fit.py``; BENCHMARKS.md, issue 51 round 6)."""
LONE_COSINE = 0.42
"""The similarity given, without a model call, to the one sentence all contenders stand in
(``_with_similarity``): the mean MiniLM cosine of such sentences with their question on the dev
sets (0.42; 0.3 to 0.5 give the same tune-half answers, BENCHMARKS.md, issue 51 round 6)."""
_SIMILARITY = FEATURES.index("similarity")
_WORD = re.compile(r"\w+")
FOCUS_SENTENCES = 4
"""Sentences beyond the leads and bridges whose entities are read, by question words (``focus``)."""


@dataclass(frozen=True)
class Evidence:
    """One evidence sentence: the passage it is in (index into ``documents``) and its text."""

    doc_index: int
    sentence: str


@dataclass(frozen=True)
class Reading:
    """The reader's answer, the evidence it stands on, and how sure it is.

    ``answer`` is a short span verbatim from a passage ("yes"/"no" for a polar question, the
    item as the question names it for which-of-two), "" when ``no_evidence``. ``quote`` is
    the sentence(s) the answer stands on, verbatim; ``chain`` the evidence hop by hop (a
    bridge sentence first, the answer's sentence last). ``reason`` says why there is no
    answer, or in one line why this one.
    """

    answer: str
    answer_type: str
    quote: str
    doc_index: int | None
    chain: tuple[Evidence, ...]
    confidence: float
    no_evidence: bool
    reason: str


@dataclass(frozen=True)
class Weights:
    """The linear model: one weight per feature, and the confidence threshold."""

    weights: tuple[float, ...]
    threshold: float


@cache
def load_weights(path: Path = WEIGHTS_PATH) -> Weights:
    """The shipped weights (``rag_graphs/data/reader_weights.json``).

    Raises:
        ValueError: the file lacks a feature's weight or the threshold (named).
    """
    raw = json.loads(path.read_text(encoding="utf-8"))
    weights = raw.get("weights", {})
    missing = [f for f in FEATURES if f not in weights]
    if missing or "threshold" not in raw:
        raise ValueError(f"{path}: missing {', '.join(missing) or 'threshold'}; rerun bench/reader_fit.py")
    return Weights(tuple(float(weights[f]) for f in FEATURES), float(raw["threshold"]))


def _no_evidence(kind: str, reason: str) -> Reading:
    return Reading("", kind, "", None, (), 0.0, True, reason)


def similarity_sentences(question: str, passages: list[ParsedPassage]) -> list[tuple[int, int]]:
    """(passage, sentence) of the sentences whose similarity is measured: the
    ``MAX_SIMILARITY_SENTENCES`` holding the most question words (with their passage's title)."""
    words = content_words(question)
    scored = []
    for d, passage in enumerate(passages):
        for s, sentence in enumerate(passage.sentences):
            overlap = len(words & sentence.words) + len(words & passage.title_stems)
            scored.append((-overlap, d, s))
    return [(d, s) for _, d, s in sorted(scored)[:MAX_SIMILARITY_SENTENCES]]


def sentence_similarities(
    question: str,
    passages: list[ParsedPassage],
    embeddings: Embeddings | None,
    only: set[tuple[int, int]] | None = None,
) -> dict[tuple[int, int], float]:
    """Cosine of the question with ``similarity_sentences`` (those in ``only``, when given), in
    one embedding call (the question in it, for a symmetric model); vectors are kept by text
    (``_VECTORS``), so a passage or question read again costs no model call."""
    if embeddings is None:
        return {}
    chosen = [at for at in similarity_sentences(question, passages) if only is None or at in only]
    if not chosen:
        return {}
    texts = [passages[d].sentences[s].text for d, s in chosen]
    if _symmetric(embeddings):  # the question goes in the sentences' batch: one model call
        *found, asked = _VECTORS.embed(embeddings, [*texts, question])
    else:
        found, asked = _VECTORS.embed(embeddings, texts), embed_queries(embeddings, [question])[0]
    vectors, query = np.asarray(found, dtype=float), np.asarray(asked, dtype=float)
    norms = np.linalg.norm(vectors, axis=1) * (np.linalg.norm(query) or 1.0)
    cosines = vectors @ query / np.where(norms == 0, 1.0, norms)
    return {at: float(c) for at, c in zip(chosen, cosines, strict=True)}


def _symmetric(embeddings: Embeddings) -> bool:
    """True for a model that embeds a query exactly as a passage (a sentence-transformers model
    without query settings, MiniLM the default: ``store.reads.embed_queries``'s rule), so the
    question can share the sentences' model call and their cache (a call costs far more than its
    texts: BENCHMARKS.md issue 51 round 3)."""
    from langchain_huggingface import HuggingFaceEmbeddings

    return isinstance(embeddings, HuggingFaceEmbeddings) and not embeddings.query_encode_kwargs


class _VectorCache:
    """Sentence vectors by text, for one embedding model at a time: a read with another model
    object empties it (the model is held, so its identity cannot pass to a new object)."""

    size = 8192
    """Vectors kept (a few megabytes for MiniLM)."""

    def __init__(self) -> None:
        self.model: Embeddings | None = None
        self.vectors: OrderedDict[str, list[float]] = OrderedDict()
        self.lock = threading.Lock()

    def embed(self, embeddings: Embeddings, texts: list[str]) -> list[list[float]]:
        """``embeddings.embed_documents(texts)``, the texts embedded before looked up."""
        with self.lock:
            if self.model is not embeddings:
                self.model, self.vectors = embeddings, OrderedDict()
            found = {t: self.vectors[t] for t in texts if t in self.vectors}
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            fresh = dict(zip(missing, embeddings.embed_documents(missing), strict=True))
            found.update(fresh)
            with self.lock:
                if self.model is embeddings:
                    self.vectors.update(fresh)
                    while len(self.vectors) > self.size:
                        self.vectors.popitem(last=False)
        return [found[t] for t in texts]


_VECTORS = _VectorCache()


def _with_similarity(
    question: str,
    passages: list[ParsedPassage],
    candidates: list[Candidate],
    embeddings: Embeddings,
    weights: Weights,
) -> list[Candidate]:
    """``candidates`` with their sentence's similarity, measured only where it can change the
    answer: the similarity moves a candidate past another by at most ``COSINE_SPREAD * |w|`` (w
    its weight, the spread the most two cosines with the question differ), so only the sentences
    of candidates scoring within that of the best without it are embedded (the rest keep 0, as
    sentences beyond ``MAX_SIMILARITY_SENTENCES`` always did). The winner is the one embedding
    every measured sentence would give while the cosines keep within the spread; embedding is most
    of the reader's cost with an embedder (issue 51: < 50 ms a question).

    When every contender stands in one sentence (about half the reads), its cosine moves them all
    alike and cannot change the winner, only the winner's share against the candidates out of
    reach (the confidence): that sentence takes ``LONE_COSINE``, the cosine such a sentence has on
    average, and no model is called."""
    w = weights.weights[_SIMILARITY]
    scores = np.asarray([c.features for c in candidates]) @ np.asarray(weights.weights)
    reach = scores.max() - COSINE_SPREAD * abs(w)
    contenders = {
        (c.doc_index, c.sentence) for c, score in zip(candidates, scores, strict=True) if score >= reach
    }
    if len(contenders) == 1:
        measured = set(similarity_sentences(question, passages))
        similarities = {at: LONE_COSINE for at in contenders if at in measured}
    else:
        similarities = sentence_similarities(question, passages, embeddings, only=contenders)
    return [
        dataclasses.replace(
            c,
            features=c.features[:_SIMILARITY]
            + (similarities.get((c.doc_index, c.sentence), 0.0),)
            + c.features[_SIMILARITY + 1 :],
        )
        for c in candidates
    ]


def parsed_documents(documents: Sequence[Document], question: str | None = None) -> list[ParsedPassage]:
    """``documents`` parsed; with ``question``, NER reads only the sentences ``focus`` keeps."""
    pairs = []
    for doc in documents:
        title = str((doc.metadata or {}).get("title") or "")
        pairs.append((title, split_title(doc.page_content, title)))
    chosen = None if question is None else focus(question, [title for title, _ in pairs])
    return parse_passages(pairs, chosen)


def focus(question: str, titles: list[str]) -> Selector | None:
    """The sentences an answer to ``question`` can be in or be reached through, for NER to read
    (issue 51: NER over whole passages was nearly all of the reader's cost): each passage's lead
    (its heading lines and first sentence: a biography's dates and a title's spelling), every
    sentence naming another passage's title (a bridge) and all of that passage (a second hop's
    answer need share no word with the question: "died" for "place of death"), and the
    ``FOCUS_SENTENCES`` other sentences sharing the most question words (a tie goes to the
    higher-ranked passage, then the earlier sentence: a short passage is read whole). Which-of-two
    and yes/no questions compare whatever their items' passages say: every sentence (None)."""
    if answer_type(question).kind in ("which_of_two", "yes_no"):
        return None
    words = content_words(question)
    names = {d: f" {name} " for d, title in enumerate(titles) if (name := _words(QUALIFIER.sub("", title)))}

    def select(prose: list[tuple[int, int, str]]) -> set[tuple[int, int]]:
        chosen, lead, reached = set(), set(), set()
        for d, i, text in prose:
            if d not in lead:
                chosen.add((d, i))
                if HEADING.fullmatch(text) is None:
                    lead.add(d)
            said = f" {_words(text)} "
            named = {other for other, name in names.items() if other != d and name in said}
            if named:
                chosen.add((d, i))
                reached |= named
        chosen.update((d, i) for d, i, _ in prose if d in reached)
        shared = sorted((-len(words & stems(text)), d, i) for d, i, text in prose if (d, i) not in chosen)
        chosen.update((d, i) for _, d, i in shared[:FOCUS_SENTENCES])
        return chosen

    return select


def _words(text: str) -> str:
    """``text``'s words in lower case, one space apart ("N. N. Pisharody" -> "n n pisharody")."""
    return " ".join(_WORD.findall(text.lower()))


def _bridge_evidence(candidate: Candidate, passages: list[ParsedPassage]) -> tuple[Evidence, ...]:
    """The chain to ``candidate``: the bridge sentence that leads to its passage (when another
    passage leads there), then the candidate's own sentence."""
    own = Evidence(candidate.doc_index, passages[candidate.doc_index].sentences[candidate.sentence].text)
    if candidate.bridge is None:
        return (own,)
    d, s = candidate.bridge
    return (Evidence(d, passages[d].sentences[s].text), own)


def read(
    question: str,
    documents: Sequence[Document],
    *,
    embeddings: Embeddings | None = None,
    threshold: float | None = None,
    rerank: bool = True,
) -> Reading:
    """The answer to ``question`` found in ``documents`` (best first), or ``no_evidence``.

    ``embeddings`` (the run's model, already loaded) adds the sentence-question similarity.
    ``threshold`` overrides the least confidence of an answer. The trees (``reader_rank``) pick
    among the linear model's candidates; ``rerank=False``: the linear model alone, as before them.
    """
    typed = answer_type(question)
    weights = load_weights()
    if not documents:
        return _no_evidence(typed.kind, "no documents to read")
    passages = parsed_documents(documents, question)
    decided = _decide(question, typed, passages)
    if decided is not None:
        return decided
    if not reader_features.asked_in(question, passages):
        return _no_evidence(typed.kind, "the passages hold none of the question's words")
    if typed.kind in ABOUT_THEM and unresolved_role(question, passages):
        return _no_evidence(typed.kind, "the passages do not say who the question's role is held by")
    candidates = candidate_features(question, typed, passages, {})
    if embeddings is not None and candidates:
        candidates = _with_similarity(question, passages, candidates, embeddings, weights)
    if not candidates:
        return _no_evidence(
            typed.kind, f"no {typed.kind} candidate in the passages that is not part of the question"
        )
    linear = np.asarray([c.features for c in candidates]) @ np.asarray(weights.weights)
    scores, least = (
        tree_scores(question, typed.kind, passages, candidates, linear)
        if rerank
        else (linear, weights.threshold)
    )
    winner, confidence = best_scored(candidates, scores)
    least = least if threshold is None else threshold
    if confidence < least:
        return _no_evidence(
            typed.kind,
            f"best candidate {winner.text!r} has confidence {confidence:.2f}, under {least:.2f}",
        )
    chain = _bridge_evidence(winner, passages)
    return Reading(
        answer=answer_text(question, winner.text),
        answer_type=typed.kind,
        quote=" ".join(e.sentence for e in chain),
        doc_index=winner.doc_index,
        chain=chain,
        confidence=confidence,
        no_evidence=False,
        reason=f"{winner.label} span of passage {winner.doc_index + 1} scoring highest of {len(candidates)}",
    )


def best_scored(candidates: Sequence[Candidate], scores: np.ndarray) -> tuple[Candidate, float]:
    """The highest-scoring candidate and its confidence (``reader_rank.top_share``)."""
    top, share = top_share([c.key for c in candidates], scores)
    return candidates[top], share


def answer_text(question: str, span: str) -> str:
    """The answer ``span`` gives: a question asking for a year gets its year ("July 16, 1911" -> "1911")."""
    year = YEAR.search(span) if ASKS_YEAR.search(question) else None
    return year.group(0) if year else span


def _decide(question: str, typed: AnswerType, passages: list[ParsedPassage]) -> Reading | None:
    """Answers decided, not picked among spans: which-of-two and yes/no questions by the compared
    items' evidence (``comparisons``), what two named items share by both their passages
    (``shared``, None without a shared answer), None for other questions."""
    if typed.kind in ("which_of_two", "yes_no"):
        compared = typed.kind == "which_of_two"
        decision = (
            compare_options(question, typed, passages) if compared else polar_answer(question, passages)
        )
        if decision is None:
            return _no_evidence(typed.kind, "the passages hold neither compared item")
    elif (decision := shared_answer(question, typed, passages)) is None:
        return None
    chain = tuple(Evidence(d, passages[d].sentences[s].text) for d, s in decision.evidence)
    return Reading(
        answer=decision.answer,
        answer_type=typed.kind,
        quote=" ".join(e.sentence for e in chain),
        doc_index=chain[-1].doc_index if chain else None,
        chain=chain,
        confidence=decision.confidence,
        no_evidence=False,
        reason=decision.reason,
    )
