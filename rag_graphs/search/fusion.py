"""Fusing rankings: every document once (``unique_union``), reciprocal rank fusion over ids
(``rrf_order``: what a run's ``documents`` ranking is built from, no document copied) or over
documents (``reciprocal_rank_fusion``), and DRAG's best-last order (``most_relevant_last``)."""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document


def unique_union(rankings: list[list[Document]]) -> list[Document]:
    """Every document once (by id), in the order first seen across the rankings."""
    seen: set[str | None] = set()
    out = []
    for ranking in rankings:
        for doc in ranking:
            if doc.id not in seen:
                seen.add(doc.id)
                out.append(doc)
    return out


def rrf_order(
    rankings: list[list[str]], *, k: int = 60, weights: list[float] | None = None
) -> list[tuple[str, float]]:
    """Reciprocal rank fusion of rankings of ids: every id once with its fused score
    ``sum over rankings of w / (k + rank)``, best first; ties keep the order first seen."""
    scores: dict[str, float] = {}
    weights = weights or [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"reciprocal_rank_fusion: {len(weights)} weights for {len(rankings)} rankings")
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, i in enumerate(ranking, start=1):
            scores[i] = scores.get(i, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])  # sorted() is stable: ties stay first-seen


def reciprocal_rank_fusion(
    rankings: list[list[Document]],
    *,
    k: int = 60,
    top_k: int | None = None,
    weights: list[float] | None = None,
) -> list[Document]:
    """Fuse rankings by RRF (Cormack et al. 2009): score(d) = sum over rankings of w / (k + rank).

    ``weights`` (one per ranking, default 1) is weighted RRF: a ranking with weight 2
    counts as two votes. Ties keep the order in which documents were first seen; each
    document carries its fused score in ``metadata["rrf_score"]``.
    """
    first: dict[Any, Document] = {}
    for ranking in rankings:
        for doc in ranking:
            first.setdefault(doc.id, doc)
    order = rrf_order([[d.id for d in r] for r in rankings], k=k, weights=weights)  # type: ignore[misc]
    return [
        Document(id=i, page_content=first[i].page_content, metadata={**first[i].metadata, "rrf_score": score})
        for i, score in order[: top_k or len(order)]
    ]


def most_relevant_last(docs: list[Document]) -> list[Document]:
    """Rank order reversed, so the best passage sits right before the question in the prompt.

    DRAG's ordering (Yue et al. 2024): long contexts are read best near their end.
    """
    return list(reversed(docs))
