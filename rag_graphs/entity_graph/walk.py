"""The graph one question walks: passages, entities and facts as nodes, and the walk's maths.

HippoRAG 2's ablation (arXiv 2502.14802, Table 4) and LinearRAG (arXiv 2510.10114) put passages
and facts into the graph beside the entities: a passage node is linked to the entities it holds,
a fact node (a sentence, ``rag_graphs.entity_graph.facts``) to its passage and to the entities it names.
Only
the facts found for the question are nodes, so the graph stays the size of the question's
neighbourhood (``rag_graphs.entity_graph.neighbourhood.fetch_neighbourhood``), never the store's.

Node order in every vector: the passages, then the entities, then the facts.

``pagerank`` is Personalized PageRank by power iteration on a scipy sparse adjacency;
``fuse`` is the never-lose step: weighted reciprocal rank fusion of the walk's passage ranking
with the first (hybrid) ranking, so a passage that one hybrid search ranks confidently keeps
its place unless the walk finds something it agrees on; ``protect_first`` is its narrow form
(hybrid's first one or two hits stay on top, the walk orders the rest). ``passage_resets`` are
HippoRAG 2's passage node restart weights (every walked passage by its dense similarity).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rag_graphs.entity_graph.facts import Fact


@dataclass
class WalkGraph:
    """A question's neighbourhood as one undirected graph (scipy CSR adjacency)."""

    chunks: list[str]
    entities: dict[str, int]  # entity key -> its column among the entities
    facts: list[Fact] = field(default_factory=list)
    adjacency: object = None  # scipy.sparse.csr_matrix, square, symmetric

    @property
    def size(self) -> int:
        return len(self.chunks) + len(self.entities) + len(self.facts)

    def entity_node(self, key: str) -> int | None:
        column = self.entities.get(key)
        return None if column is None else len(self.chunks) + column

    def fact_node(self, position: int) -> int:
        return len(self.chunks) + len(self.entities) + position


def build_walk_graph(
    edges: dict[str, list[str]],
    hubs: set[str],
    facts: Sequence[Fact] = (),
    *,
    titled: dict[str, set[str]] | None = None,
    title_weight: float = 1.0,
) -> WalkGraph:
    """Passages linked to their non-hub entities; each fact whose passage is in ``edges`` linked
    to that passage and to the non-hub entities it names (facts of other passages are left out:
    the walk never reaches past what the caller's filter let the neighbourhood read).

    Every edge weighs 1 but a passage's edge to an entity its title or headings name
    (``titled``), which weighs ``title_weight``: a walk that reaches an entity goes on mostly
    to the passage about it (a bridge entity's own page), not to every passage that mentions it.
    """
    import scipy.sparse as sp

    chunks = list(edges)
    position = {cid: i for i, cid in enumerate(chunks)}
    entities: dict[str, int] = {}
    weights: dict[tuple[int, int], float] = {}
    for i, cid in enumerate(chunks):
        about = (titled or {}).get(cid, ())
        for key in dict.fromkeys(edges[cid]):
            if key not in hubs:
                node = len(chunks) + entities.setdefault(key, len(entities))
                weights[(i, node)] = title_weight if key in about else 1.0
    kept = [f for f in facts if f.parent in position]
    graph = WalkGraph(chunks, entities, kept)
    for j, fact in enumerate(kept):
        node = graph.fact_node(j)
        weights[(position[fact.parent], node)] = 1.0
        for key in dict.fromkeys(fact.entities):
            entity = graph.entity_node(key)
            if entity is not None:
                weights[(entity, node)] = 1.0
    n = graph.size
    rows = [a for a, _ in weights]
    cols = [b for _, b in weights]
    upper = sp.csr_matrix((list(weights.values()), (rows, cols)), shape=(n, n))
    graph.adjacency = (upper + upper.T).tocsr()
    return graph


def pagerank(adjacency, reset: np.ndarray, *, damping: float, tol: float = 1e-6, max_iter: int = 100):
    """Personalized PageRank over a symmetric sparse ``adjacency`` restarting at ``reset``.

    ``reset`` is normalised to the restart distribution; a walker follows an edge with
    probability ``damping`` and restarts otherwise; mass at a node without edges restarts
    too. Returns the stationary probabilities (zeros when ``reset`` is all zero).
    """
    total = reset.sum()
    if total <= 0:
        return np.zeros(adjacency.shape[0])
    reset = reset / total
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    inverse = np.divide(1.0, degree, out=np.zeros_like(degree, dtype=float), where=degree > 0)
    step = (adjacency.T.multiply(inverse)).tocsr()  # column-stochastic on nodes with edges
    dangling = degree == 0
    rank = reset.copy()
    for _ in range(max_iter):
        walked = step @ rank
        new = damping * (walked + rank[dangling].sum() * reset) + (1 - damping) * reset
        if np.abs(new - rank).sum() < tol:
            return new
        rank = new
    return rank


def restart_shares(scores: np.ndarray, weight: float, seed_total: float) -> np.ndarray:
    """Restart weights of scored nodes (passages by their dense/hybrid score, facts by their
    similarity): proportional to ``scores``, summing to ``weight`` x ``seed_total`` (the entity
    seeds' total), so ``weight`` is their share of the restart relative to the seeds (HippoRAG 2's
    passage node weight: 0.05). All zeros when there are no seeds, no weight or no score."""
    scores = np.clip(np.asarray(scores, dtype=float), 0.0, None)
    total = scores.sum()
    if seed_total <= 0 or weight <= 0 or total <= 0:
        return np.zeros(len(scores))
    return scores / total * weight * seed_total


def fuse(walk: Sequence[str], first: Sequence[str], *, weight: float, k: int = 60) -> list[tuple[str, float]]:
    """Ids with their fused scores, best first, by weighted reciprocal rank fusion:
    1 / (k + walk rank) + weight / (k + first rank) (an id missing from a ranking gets nothing from it).

    ``weight`` 0 is the walk's order; a large weight is the first ranking's order with the walk
    breaking ties and filling in below it. Ties keep the walk's order.
    """
    scores: dict[str, float] = {}
    for rank, cid in enumerate(walk, start=1):
        scores[cid] = 1.0 / (k + rank)
    if weight > 0:
        for rank, cid in enumerate(first, start=1):
            scores[cid] = scores.get(cid, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])


def protect_first(ranked: Sequence[str], first: Sequence[str], n: int) -> list[str]:
    """``ranked`` with the first ``n`` ids of ``first`` (those ``ranked`` holds) moved to its top,
    in ``first``'s order; the rest keep their order below them.

    The narrow never-lose step: what one hybrid search ranks first stays first, and the walk
    only decides the places below it (where multi-hop questions' later hops sit).

    >>> protect_first(["c", "a", "d", "b"], ["b", "x", "a"], 2)
    ['b', 'c', 'a', 'd']
    """
    present = set(ranked)
    kept = [cid for cid in dict.fromkeys(first[: max(n, 0)]) if cid in present]
    held = set(kept)
    return kept + [cid for cid in ranked if cid not in held]


def passage_resets(similarity: np.ndarray, weight: float) -> np.ndarray:
    """HippoRAG 2's passage node restart weights: every passage of the walked graph restarts with
    ``weight`` x its cosine similarity to the question, min-max normalised over those passages
    (absolute, not a share of the seeds: an entity seed restarts with its match similarity / its
    chunk count, so with ``weight`` ~0.05 one seed outweighs any one passage, while the
    passages together keep the walk near the dense ranking). Zeros for ``weight`` 0.
    """
    values = np.asarray(similarity, dtype=float)
    if weight <= 0 or values.size == 0:
        return np.zeros(values.size)
    low, high = float(values.min()), float(values.max())
    scaled = (values - low) / (high - low) if high > low else np.ones(values.size)
    return weight * scaled


def keep_within(ranked: Sequence[str], first: Sequence[str], n: int, k: int) -> list[str]:
    """``ranked`` with the first ``n`` ids of ``first`` (those ``ranked`` holds) inside its top ``k``:
    one the walk ranked lower takes the place of the walk's last non-protected id in the top ``k``,
    after the others (they keep the walk's order); below the top ``k`` the order is the walk's.

    What one hybrid search put in its first places is never pushed out of the result, while
    the walk still orders the top and fills the rest of it.

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
