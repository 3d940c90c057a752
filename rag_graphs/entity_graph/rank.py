"""Graph search's last stage: rank the walked chunks under hybrid search's confident top.

The walk orders the chunks by PPR probability; what one hybrid search ranks first stays first
(``keep_first``) and its first few are never pushed out of the top ``k`` (``keep_in_top``), so
graph search keeps hybrid's confident hits while the walk decides the places below them, where a
multi-hop question's later hops sit (issue 28, round 2: on the check halves R@2 above hybrid on
MuSiQue, 2Wiki and HotpotQA, and per-question R@5 losses under 10%). Fusing the two rankings by
weighted reciprocal rank fusion instead (``hybrid_weight``, ``fuse_depth``) was dominated on
MuSiQue's tune half and left the product.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from langchain_core.documents import Document

from rag_graphs.entity_graph.walk import minmax
from rag_graphs.store.index import ChunkIndex
from rag_graphs.store.mirror import ChunkMirror


def protect_first(ranked: Sequence[str], first: Sequence[str], n: int) -> list[str]:
    """``ranked`` with the first ``n`` ids of ``first`` (those ``ranked`` holds) moved to its top,
    in ``first``'s order; the rest keep their order below them.

    >>> protect_first(["c", "a", "d", "b"], ["b", "x", "a"], 2)
    ['b', 'c', 'a', 'd']
    """
    present = set(ranked)
    kept = [cid for cid in dict.fromkeys(first[: max(n, 0)]) if cid in present]
    held = set(kept)
    return kept + [cid for cid in ranked if cid not in held]


def keep_within(ranked: Sequence[str], first: Sequence[str], n: int, k: int) -> list[str]:
    """``ranked`` with the first ``n`` ids of ``first`` (those ``ranked`` holds) inside its top ``k``:
    one the walk ranked lower takes the place of the walk's last non-protected id in the top ``k``,
    after the others (they keep the walk's order); below the top ``k`` the order is the walk's.

    >>> keep_within(["a", "b", "c", "d", "e"], ["e", "a"], 2, 3)
    ['a', 'b', 'e', 'c', 'd']
    """
    present = set(ranked)
    must = [cid for cid in dict.fromkeys(first[: max(n, 0)]) if cid in present][:k]
    top = set(ranked[:k])
    missing = [cid for cid in must if cid not in top]
    if not missing:
        return list(ranked)
    held = set(must)
    others = {cid for cid in [c for c in ranked if c not in held][: k - len(must)]}
    head = [cid for cid in ranked[:k] if cid in held or cid in others] + missing
    chosen = set(head)
    return head + [cid for cid in ranked if cid not in chosen]


def rank(
    chunks: list[str],
    probabilities: np.ndarray,
    protected: Sequence[str],
    *,
    k: int,
    keep_first: int,
    keep_in_top: int,
) -> list[tuple[str, float]]:
    """The top ``k`` walked ``chunks`` with their scores (their PPR ``probabilities`` min-max
    normalised, handed out best first in the final order): by the walk, with ``protected``'s
    (hybrid's ranking's) first ``keep_first`` on top and its first ``keep_in_top`` inside the
    top ``k``."""
    final = minmax(probabilities)
    order = np.argsort(-final, kind="stable")
    ranked = [chunks[i] for i in order]
    if keep_first > 0 or keep_in_top > 0:
        ranked = keep_within(protect_first(ranked, protected, keep_first), protected, keep_in_top, k)
    return [(cid, float(score)) for cid, score in zip(ranked[:k], final[order][:k], strict=False)]


def full_order(
    chunks: list[str],
    probabilities: np.ndarray,
    protected: Sequence[str],
    *,
    k: int,
    keep_first: int,
    keep_in_top: int,
) -> list[str]:
    """Every walked chunk in ``rank``'s order: its top ``k``, then the walk's order under
    ``keep_first`` (the candidates a learned ranker re-orders, ``rag_graphs.entity_graph.candidates``)."""
    top = [
        cid
        for cid, _ in rank(
            chunks, probabilities, protected, k=k, keep_first=keep_first, keep_in_top=keep_in_top
        )
    ]
    held = set(top)
    walked = [chunks[i] for i in np.argsort(-minmax(probabilities), kind="stable")]
    return top + [cid for cid in protect_first(walked, protected, keep_first) if cid not in held]


def documents_of(
    index: ChunkIndex,
    ranked: list[tuple[str, float]],
    known: dict[str, Document],
    mirror: ChunkMirror | None = None,
) -> list[tuple[Document, float]]:
    """The ranked chunks as ``(Document, score)``: those a first search read as it read them, the
    rest read by id (one that is gone by now is left out), from the store state's in-process copy
    when given (a search without a filter), else from the store."""
    missing = [cid for cid, _ in ranked if cid not in known]
    read = mirror.get(missing) if mirror is not None else index.get(missing)
    fetched = {str(d.id): d for d in read}
    found = {**fetched, **known}
    return [(found[cid], score) for cid, score in ranked if cid in found]
