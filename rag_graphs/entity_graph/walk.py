"""Graph search's third stage: the walk, Personalized PageRank over the question's neighbourhood.

The neighbourhood (``rag_graphs.entity_graph.neighbourhood.fetch_neighbourhood``) becomes one
undirected graph of passages and entities, a passage linked to the non-hub entities it holds
(HippoRAG, Gutierrez et al. 2024). The walk restarts at the seeds, each with its match similarity
times its *specificity*, 1 / (number of chunks holding it): a rare entity says more about where the
answer is (HippoRAG's node specificity); and, with ``PASSAGE_WEIGHT`` of the seeds' total, at the
dense first hits by their normalised scores (HippoRAG 2's passage nodes). Node order in every
vector: the passages, then the entities.

scipy rather than networkx: on a 1,000-node neighbourhood one walk takes ~2 ms as sparse
matrix-vector products, against ~40 ms for building a networkx graph and running its pagerank
(``bench/graph_retrieval.py --ppr``).

What measured no gain left the walk (BENCHMARKS.md, issue 28 rounds 2 and 3): fact (sentence)
nodes and fact seeds, every passage restarting by its similarity (``passage_node_weight``), and
blending the dense score into the walk's.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
from langchain_core.documents import Document

from rag_graphs.entity_graph.neighbourhood import Neighbourhood
from rag_graphs.entity_graph.rows import CHUNKS_FIELD, COUNT_FIELD, NAME_FIELD

PASSAGE_WEIGHT = 0.05
"""The dense first hits' share of the restart, relative to the seeds' total (HippoRAG 2's passage
node weight): enough to break ties towards what the question says, too little to pull the walk
back to the lexical neighbours a multi-hop question needs to leave."""


@dataclass
class WalkGraph:
    """A question's neighbourhood as one undirected graph (scipy CSR adjacency)."""

    chunks: list[str]
    entities: dict[str, int]  # entity key -> its column among the entities
    adjacency: object = None  # scipy.sparse.csr_matrix, square, symmetric

    @property
    def size(self) -> int:
        return len(self.chunks) + len(self.entities)

    def entity_node(self, key: str) -> int | None:
        column = self.entities.get(key)
        return None if column is None else len(self.chunks) + column


def build_walk_graph(
    edges: dict[str, list[str]],
    hubs: set[str],
    *,
    titled: dict[str, set[str]] | None = None,
    title_weight: float = 1.0,
) -> WalkGraph:
    """Passages linked to their non-hub entities.

    Every edge weighs 1 but a passage's edge to an entity its title or headings name
    (``titled``), which weighs ``title_weight``: a walk that reaches an entity goes on mostly
    to the passage about it (a bridge entity's own page), not to every passage that mentions it.
    """
    import scipy.sparse as sp

    chunks = list(edges)
    entities: dict[str, int] = {}
    weights: dict[tuple[int, int], float] = {}
    for i, cid in enumerate(chunks):
        about = (titled or {}).get(cid, ())
        for key in dict.fromkeys(edges[cid]):
            if key not in hubs:
                node = len(chunks) + entities.setdefault(key, len(entities))
                weights[(i, node)] = title_weight if key in about else 1.0
    graph = WalkGraph(chunks, entities)
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


def personalized_pagerank(
    incidence, reset: np.ndarray, *, damping: float = 0.5, tol: float = 1e-6, max_iter: int = 100
) -> np.ndarray:
    """PPR over the bipartite graph with ``incidence`` (chunks x entities, scipy sparse): nodes
    are the chunks then the entities, as in ``WalkGraph``; otherwise ``pagerank``."""
    import scipy.sparse as sp

    adjacency = sp.bmat([[None, incidence], [incidence.T, None]], format="csr")
    return pagerank(adjacency, reset, damping=damping, tol=tol, max_iter=max_iter)


def restart_shares(scores: np.ndarray, weight: float, seed_total: float) -> np.ndarray:
    """Restart weights of passages by their first-search scores: proportional to ``scores``,
    summing to ``weight`` x ``seed_total`` (the entity seeds' total), so ``weight`` is their share
    of the restart relative to the seeds (``PASSAGE_WEIGHT``). All zeros when there are no seeds,
    no weight or no score."""
    scores = np.clip(np.asarray(scores, dtype=float), 0.0, None)
    total = scores.sum()
    if seed_total <= 0 or weight <= 0 or total <= 0:
        return np.zeros(len(scores))
    return scores / total * weight * seed_total


def minmax(values: np.ndarray) -> np.ndarray:
    """``values`` scaled to [0, 1] (all equal: 1 where positive, else 0)."""
    if values.size == 0:
        return values
    low, high = float(values.min()), float(values.max())
    return (values - low) / (high - low) if high > low else (values > 0).astype(float)


@dataclass(frozen=True)
class Walk:
    """The walk's outcome: the walked chunks (node order), each one's PPR probability (None when
    no seed is in the graph: nothing walked), the seeds it restarted at (name, weight; heaviest
    first) and the number of entity nodes."""

    chunks: list[str]
    probabilities: np.ndarray | None
    seeds: list[tuple[str, float]]
    entities: int


def seed_restarts(graph: WalkGraph, hood: Neighbourhood, seeds: dict[str, dict]) -> tuple[np.ndarray, list]:
    """Each seed's restart weight on its node, its match similarity / its chunk count (the
    stored count, or the chunks the caller can see when the stored list is complete), and the
    seeds placed (name, weight). A seed no visible chunk holds has no node and is left out."""
    visible = Counter(key for cid in graph.chunks for key in set(hood.edges[cid]) if key not in hood.hubs)
    reset = np.zeros(graph.size)
    placed = []
    for key, row in seeds.items():
        node = graph.entity_node(key)
        if node is None:  # no chunk the caller may see holds it
            continue
        listed = len(row.get(CHUNKS_FIELD) or [])
        count = visible[key] if int(row.get(COUNT_FIELD) or 0) <= listed else int(row[COUNT_FIELD])
        weight = row["similarity"] / max(count, 1.0)  # specificity: rare entities say more
        reset[node] = weight
        placed.append((row.get(NAME_FIELD) or key, weight))
    return reset, placed


def walk(
    hood: Neighbourhood,
    seeds: dict[str, dict],
    dense: list[tuple[Document, float]],
    *,
    damping: float,
    title_weight: float,
) -> Walk:
    """PPR over ``hood`` restarting at the ``seeds`` and, by ``PASSAGE_WEIGHT``, at the ``dense``
    first hits (all of them in ``hood``); each chunk's stationary probability."""
    graph = build_walk_graph(hood.edges, hood.hubs, titled=hood.titled, title_weight=title_weight)
    reset, placed = seed_restarts(graph, hood, seeds)
    position = {cid: i for i, cid in enumerate(graph.chunks)}
    scores = minmax(np.array([s for _, s in dense], dtype=float))
    seed_total = reset.sum()
    for (doc, _), weight in zip(dense, restart_shares(scores, PASSAGE_WEIGHT, seed_total), strict=True):
        reset[position[str(doc.id)]] += weight
    ranked = sorted(placed, key=lambda s: -s[1])
    if seed_total <= 0:
        return Walk(graph.chunks, None, ranked, len(graph.entities))
    probabilities = pagerank(graph.adjacency, reset, damping=damping)[: len(graph.chunks)]
    return Walk(graph.chunks, probabilities, ranked, len(graph.entities))
