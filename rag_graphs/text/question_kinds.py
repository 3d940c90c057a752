"""Question kinds by nearest labelled examples: the ``auto`` router's default classifier.

Adaptive-RAG (Jeong et al. 2024) routes with a small trained classifier, not
with the answering model. This is the training-free form of that idea (a
"semantic router"): the question is embedded with the run's embedding model
and takes the kind whose labelled example questions are nearest to it.

Why not ask the chat model: SmolLM2-135M, the embedded default, picks the
first option it is offered. Asked with ``prompts/templates/classify_question.txt``,
it sends 88-96% of real multi-hop questions (HotpotQA, MuSiQue, 2Wiki,
Bamboogle) to "no retrieval"; the nearest examples send 100% to retrieval,
in ~15 ms and no model call (``bench/router.py``, BENCHMARKS.md).
``RagContext.router="llm"`` keeps the chat-model classifier for strong models.

The examples are data: ``prompts/question_kinds.json`` ships generic ones;
``RagContext.router_examples`` points at a file with questions typical of
your own documents.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal, get_args

import numpy as np
from langchain_core.embeddings import Embeddings

from rag_graphs.store.reads import embed_queries
from rag_graphs.text.jsonl import existing_path, read_json_object

Kind = Literal["no_retrieval", "single_hop", "multi_hop", "global_summary"]
KINDS: tuple[str, ...] = get_args(Kind)
NEIGHBOURS = 5
"""Examples that vote, each with its cosine similarity as its weight."""
CONFIDENT = 0.4
"""Least similarity of the nearest example for a kind that searches less than a question
needs (``no_retrieval``, ``global_summary``). With MiniLM, greetings and arithmetic score
0.40-0.52 against their examples; HotpotQA questions that the vote sends there score
0.15-0.39 (they are far from every example), and go to a retrieval kind instead."""
_RISKY = ("no_retrieval", "global_summary")
UNSURE_MARGIN = 0.25
"""A vote is unsure when the chosen kind's share of it leads the next kind's by less than this
(a 3-2 split of equally near examples leads by 0.2), or trails it (a risky kind overruled):
``auto`` may then ask back (``RagContext.interrupts`` with ``clarify``)."""


@dataclass(frozen=True)
class KindVote:
    """The kind chosen, its summed similarity, and the nearest example that voted for it."""

    kind: str
    score: float
    nearest: str
    similarity: float
    margin: float = 1.0
    """The chosen kind's share of the vote minus the best other kind's (below 0: overruled)."""

    @property
    def unsure(self) -> bool:
        """True when the vote was close (``UNSURE_MARGIN``)."""
        return self.margin < UNSURE_MARGIN


def examples_file(path: str | None) -> Path:
    """The examples file: ``path`` checked, or the shipped ``prompts/question_kinds.json``."""
    if path:
        return existing_path(path, "file", "RagContext.router_examples file")
    return Path(str(resources.files("rag_graphs.prompts").joinpath("question_kinds.json")))


def load_examples(path: Path) -> dict[str, list[str]]:
    """``{kind: [question, ...]}`` from a JSON object; keys starting with ``_`` are comments.

    Raises:
        ValueError: not JSON, an unknown kind, or a kind whose value is not a
            non-empty list of non-empty strings (the message names the file and the key).
    """
    raw = read_json_object(path)
    examples: dict[str, list[str]] = {}
    for kind, questions in raw.items():
        if kind.startswith("_"):
            continue
        if kind not in KINDS:
            raise ValueError(f"{path}: unknown question kind {kind!r}; use {', '.join(KINDS)}")
        if (
            not isinstance(questions, list)
            or not questions
            or not all(isinstance(q, str) and q.strip() for q in questions)
        ):
            raise ValueError(f"{path}: {kind!r} must be a non-empty list of non-empty strings")
        examples[kind] = [q.strip() for q in questions]
    if len(examples) < 2:
        raise ValueError(f"{path}: needs example questions for at least two kinds, has {sorted(examples)}")
    return examples


_CACHE: dict[tuple[int, Path, float], tuple[Embeddings, list[str], list[str], np.ndarray]] = {}
_CACHE_LOCK = threading.Lock()


def _unit(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (zero rows stay zero), so a dot product is a cosine."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def _example_vectors(embeddings: Embeddings, path: Path) -> tuple[list[str], list[str], np.ndarray]:
    """(kinds, questions, unit vectors) of the file's examples, embedded once per model and file version."""
    key = (id(embeddings), path, path.stat().st_mtime)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is None or hit[0] is not embeddings:  # an id reused by a new object is a miss
            examples = load_examples(path)
            kinds = [kind for kind, questions in examples.items() for _ in questions]
            questions = [q for qs in examples.values() for q in qs]
            matrix = _unit(np.asarray(embed_queries(embeddings, questions), dtype=float))
            hit = (embeddings, kinds, questions, matrix)
            _CACHE[key] = hit
    return hit[1], hit[2], hit[3]


def classify_by_examples(
    question: str, embeddings: Embeddings, path: Path, *, neighbours: int = NEIGHBOURS
) -> KindVote:
    """The kind of ``question``: a similarity-weighted vote of its ``neighbours`` nearest examples.

    A vote for ``no_retrieval`` or ``global_summary`` stands only when the
    nearest example is of that kind and at least ``CONFIDENT`` similar; else the
    better-voted retrieval kind wins (a wrong "no retrieval" costs the answer, a
    wrong retrieval only a search). Ties go to the kind first in ``KINDS``.
    """
    kinds, questions, matrix = _example_vectors(embeddings, path)
    similarities = matrix @ _unit(np.asarray(embed_queries(embeddings, [question])[0], dtype=float))
    order = np.argsort(-similarities, kind="stable")[:neighbours]  # ties: the earlier example
    ranked = [(float(similarities[i]), int(i)) for i in order]
    votes: dict[str, float] = {}
    for similarity, i in ranked:
        votes[kinds[i]] = votes.get(kinds[i], 0.0) + similarity
    kind = max(votes, key=lambda k: (votes[k], -KINDS.index(k)))
    top_similarity, top = ranked[0]
    if kind in _RISKY and (kinds[top] != kind or top_similarity < CONFIDENT):
        kind = max(("single_hop", "multi_hop"), key=lambda k: (votes.get(k, 0.0), k == "single_hop"))
    similarity, nearest = next(((s, i) for s, i in ranked if kinds[i] == kind), ranked[0])
    score = votes.get(kind, 0.0)
    other = max((v for k, v in votes.items() if k != kind), default=0.0)
    margin = (score - other) / (sum(votes.values()) or 1.0)
    return KindVote(kind=kind, score=score, nearest=questions[nearest], similarity=similarity, margin=margin)
