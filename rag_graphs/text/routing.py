"""A fitted router file: which method ``auto`` runs for a question, learnt on the user's own set.

``rag-graphs eval --report RUN --fit-router router.json`` (``rag_graphs.eval.router_fit``) writes
it; ``RagContext.router_file`` makes ``auto`` read it. The router looks at what is known before
answering (``Features``: the question's kind by the nearest labelled examples, its length in
words, its named entities, and a first search's top score and dense/keyword agreement) and splits
the questions on **one** feature into segments, each with the method fitted for it: the cheapest
whose quality was within the margin of the segment's best by a paired test. One feature and a
few segments, because a user's labelled set is small (tens to hundreds of questions): a deeper
tree would fit noise, and a segment is something a person can read and check (the file says why
each segment's method was chosen, and ``auto``'s first step quotes it).

The file is data, checked on load (``load_router``); an error names the file and the key.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from rag_graphs.catalog import METHODS
from rag_graphs.store.index import ChunkIndex
from rag_graphs.store.reads import embed_queries
from rag_graphs.text.jsonl import existing_path, read_json_object
from rag_graphs.text.question_kinds import KINDS, classify_by_examples

FORMAT = "rag-graphs-router/1"
"""The ``format`` key of a router file this version reads."""
RETRIEVAL_FEATURES = ("top_score", "agreement")
"""Features read off a first search of the question (``first_retrieval``): one search more per
question, paid only by a router that splits on one of them."""
FEATURES = ("kind", "words", "entities", *RETRIEVAL_FEATURES)
"""What a router may split on: all known before the question is answered."""


@dataclass(frozen=True)
class Features:
    """A question's routing features (``top_score`` and ``agreement``: None until searched)."""

    kind: str
    words: int
    entities: int
    top_score: float | None = None
    """The dense search's best cosine similarity: how well the corpus matches the question."""
    agreement: float | None = None
    """The share of the hybrid top k that the dense search alone also ranks in its top k: low when
    the keywords find other passages than the meaning does."""

    def describe(self) -> str:
        text = f"kind {self.kind}, {self.words} words, {self.entities} entities"
        if self.top_score is not None and self.agreement is not None:
            text += f", top score {self.top_score:.2f}, agreement {self.agreement:.2f}"
        return text


def first_retrieval(
    question: str, index: ChunkIndex, embeddings: Embeddings, *, k: int, expr: str | None
) -> tuple[float, float]:
    """(top_score, agreement) of ``question`` from one dense and one BM25 search of ``index``
    (``ChunkIndex.search_legs``), under ``expr``, the run's access filter (``store.filters.search_expr``)."""
    vector = embed_queries(embeddings, [question])[0]
    dense, fused = index.search_legs(question, vector, k=k, expr=expr)
    top = float(dense[0][1]) if dense else 0.0
    both = {str(d.id) for d, _ in dense} & {str(d.id) for d, _ in fused}
    return top, len(both) / len(fused) if fused else 0.0


def question_features(question: str, embeddings: Embeddings, examples: Path) -> Features:
    """The features of ``question``: its kind by the nearest labelled examples (``examples``, the
    file ``RagContext.router_examples`` names), its words, and its named entities (spaCy's, the
    mentions graph search links; without spaCy, capitalised words after the first)."""
    return features_of(question, classify_by_examples(question, embeddings, examples).kind)


def features_of(question: str, kind: str) -> Features:
    """The features of ``question`` whose kind is known (``auto`` has classified it already)."""
    from rag_graphs.entity_graph.linking import question_extractor

    extractor = question_extractor()
    if extractor is not None:
        entities = len(set(extractor([question])[0]))
    else:
        entities = sum(1 for w in question.split()[1:] if w[:1].isupper())
    return Features(kind=kind, words=len(question.split()), entities=entities)


@dataclass(frozen=True)
class Segment:
    """Questions whose ``feature`` equals ``equals`` (kind) or lies in ``(above, at_most]``
    (a count), and the method fitted for them."""

    method: str
    why: str
    questions: int
    feature: str | None = None
    equals: str | None = None
    above: float | None = None
    at_most: float | None = None

    def matches(self, features: Features) -> bool:
        if self.feature is None:
            return True
        value = getattr(features, self.feature)
        if value is None:  # not searched: no segment on a retrieval feature takes it
            return False
        if self.equals is not None:
            return value == self.equals
        low = self.above if self.above is not None else float("-inf")
        high = self.at_most if self.at_most is not None else float("inf")
        return low < value <= high

    def describe(self) -> str:
        if self.feature is None:
            return "every question"
        if self.equals is not None:
            return f"{self.feature} = {self.equals}"
        parts = [
            f"> {self.above:g}" if self.above is not None else "",
            f"<= {self.at_most:g}" if self.at_most is not None else "",
        ]
        return f"{self.feature} {' and '.join(p for p in parts if p)}"


@dataclass(frozen=True)
class Router:
    """A fitted router: ``segments`` tried in order, ``default`` for a question none matches."""

    path: str
    metric: str
    cost: str
    margin: float
    segments: tuple[Segment, ...]
    default: Segment

    @property
    def needs_retrieval(self) -> bool:
        """True when a segment splits on a feature of the first search (``RETRIEVAL_FEATURES``)."""
        return any(s.feature in RETRIEVAL_FEATURES for s in self.segments)

    def choose(self, features: Features) -> tuple[str, str]:
        """(method, why) for a question with ``features``."""
        segment = next((s for s in self.segments if s.matches(features)), self.default)
        return segment.method, f"{segment.describe()}: {segment.why}"


def _segment(raw: Any, where: str) -> Segment:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected an object")
    method = raw.get("method")
    if method not in METHODS or method == "auto":
        raise ValueError(f"{where}.method: {method!r} is not a method auto can route to")
    feature = raw.get("feature")
    if feature is not None and feature not in FEATURES:
        raise ValueError(f"{where}.feature: {feature!r}; use one of {', '.join(FEATURES)}")
    equals = raw.get("equals")
    if equals is not None and (feature != "kind" or equals not in KINDS):
        raise ValueError(f"{where}.equals: {equals!r} must be a question kind ({', '.join(KINDS)})")
    bounds = {k: raw.get(k) for k in ("above", "at_most")}
    for key, value in bounds.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ValueError(f"{where}.{key}: {value!r} is not a number")
    return Segment(
        method=method,
        why=str(raw.get("why", "")),
        questions=int(raw.get("questions", 0)),
        feature=feature,
        equals=equals,
        **bounds,
    )


def parse_router(raw: dict, path: str) -> Router:
    """A ``Router`` from a router file's JSON object (``path`` names it in errors)."""
    if raw.get("format") != FORMAT:
        raise ValueError(
            f"{path}: format {raw.get('format')!r}; expected {FORMAT!r} (a file --fit-router wrote)"
        )
    segments = raw.get("segments")
    if not isinstance(segments, list):
        raise ValueError(f"{path}: 'segments' must be a list")
    margin = raw.get("margin")
    if isinstance(margin, bool) or not isinstance(margin, int | float):
        raise ValueError(f"{path}: 'margin' must be a number")
    return Router(
        path=path,
        metric=str(raw.get("metric")),
        cost=str(raw.get("cost")),
        margin=float(margin),
        segments=tuple(_segment(s, f"{path}: segments[{i}]") for i, s in enumerate(segments)),
        default=_segment(raw.get("default"), f"{path}: default"),
    )


_CACHE: dict[tuple[Path, float], Router] = {}
_LOCK = threading.Lock()


def load_router(path: str | Path) -> Router:
    """The router in ``path``, read once per file version.

    Raises:
        FileNotFoundError: no file at ``path`` (named as ``RagContext.router_file``).
        ValueError: not a router file, or a key is wrong (the message names file and key).
    """
    file = existing_path(path, "file", "RagContext.router_file")
    key = (file, file.stat().st_mtime)
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = parse_router(read_json_object(file), str(file))
        return _CACHE[key]
