"""A learned ranker over graph search's candidates: regression trees loaded from a data file.

Graph search's last stage orders its candidates by the walk under hybrid search's top
(``rank.rank``); its other signals (dense and BM25 ranks, the question's cosine, the seeds a passage
holds, a title naming an entity of the first hop, word overlap) go unused there. Issue 47 asked
whether a ranker trained on those signals (``rag_graphs.entity_graph.candidates.FEATURES``) orders
them better: LightGBM's lambdarank beat every linear ranker on the tune halves of MuSiQue, 2Wiki
and HotpotQA and raised R@5 on all three check halves (BENCHMARKS.md, "Learned ranking over graph
search's candidates"). Since the second hop (``candidates.bridge_hop``: up to 5 walked passages
past the first 30 that hold a bridge entity of the first hop, and four features saying so) it is
200 trees of at most 7 leaves (BENCHMARKS.md, "A second, LLM-free hop in the ranker's pool").

The trees ship flattened as ``rag_graphs/data/graph_ranker.json``, written by
``bench/graph_ltr.py train`` from the tune halves, and are evaluated here with numpy: search needs
no LightGBM, and nothing is ever fitted at import or at search time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from rag_graphs.config.errors import SetupError
from rag_graphs.entity_graph.candidates import FEATURES, bridge_hop, candidate_features, pool_of, read_pool
from rag_graphs.entity_graph.first_search import FirstHits
from rag_graphs.entity_graph.neighbourhood import Neighbourhood
from rag_graphs.entity_graph.rank import full_order
from rag_graphs.entity_graph.walk import Walk, minmax
from rag_graphs.store.index import ChunkIndex
from rag_graphs.store.mirror import ChunkMirror

RANKER_PATH = Path(__file__).parents[1] / "data" / "graph_ranker.json"


@dataclass(frozen=True)
class TreeRanker:
    """A sum of regression trees over the candidates' features (a gradient-boosted ranker's trees,
    flattened): node ``i`` splits on ``feature[i]`` (``x <= threshold[i]`` goes to ``left[i]``, else
    ``right[i]``) or, with ``feature[i] == -1``, is a leaf worth ``value[i]``; ``roots`` are the trees'
    first nodes. Higher scores rank first."""

    features: tuple[str, ...]
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    roots: np.ndarray

    def score(self, x: np.ndarray) -> np.ndarray:
        """One score per row of ``x`` (columns in ``self.features``' order): every tree descended
        for every row at once, one level per step."""
        x = np.asarray(x, dtype=float).reshape(-1, len(self.features))
        nodes = np.repeat(self.roots[:, None], len(x), axis=1)  # trees x rows
        rows = np.arange(len(x))[None, :]
        while True:
            split = self.feature[nodes]
            inner = split >= 0
            if not inner.any():
                return self.value[nodes].sum(axis=0)
            goes_left = x[rows, np.where(inner, split, 0)] <= self.threshold[nodes]
            nodes = np.where(inner, np.where(goes_left, self.left[nodes], self.right[nodes]), nodes)

    def order(self, x: np.ndarray) -> np.ndarray:
        """Row indices of ``x``, best first (ties keep the given order)."""
        return np.argsort(-self.score(x), kind="stable")


NODE_FIELDS = ("feature", "threshold", "left", "right", "value")


def load_ranker(path: Path | None = None) -> TreeRanker:
    """The ranker in ``path`` (default: the shipped ``RANKER_PATH``).

    Raises:
        SetupError: the file is missing, is not a ranker's JSON, or was written for other features
            than ``candidates.FEATURES`` (the message names the file).
    """
    path = RANKER_PATH if path is None else Path(path)
    return load_trees(path, FEATURES, "graph ranker", "bench/graph_ltr.py train")[0]


def load_trees(path: Path, expected: Sequence[str], name: str, fitted_by: str) -> tuple[TreeRanker, dict]:
    """The trees in ``path``, checked against the ``expected`` feature names, and the file's whole
    JSON (a ranker file may carry more, e.g. the extract reader's threshold). ``name`` and
    ``fitted_by`` (the command that writes the file) are for the messages.

    Raises:
        SetupError: the file is missing, is not a ranker's JSON, or was written for other features
            than ``expected`` (the message names the file).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SetupError(f"{name} file {path} does not exist ({fitted_by} writes it)") from None
    except (OSError, ValueError) as exc:
        raise SetupError(f"{name} file {path} is not readable JSON: {exc}") from None
    try:
        features = tuple(str(f) for f in data["features"])
        nodes = {key: np.asarray(data["nodes"][key], dtype=float) for key in NODE_FIELDS}
        roots = np.asarray(data["roots"], dtype=int)
    except (KeyError, TypeError, ValueError) as exc:
        raise SetupError(
            f"{name} file {path} lacks a field or has a bad value ({exc}): it needs "
            f"'features', 'roots' and 'nodes' with {', '.join(NODE_FIELDS)}"
        ) from None
    if features != tuple(expected):
        raise SetupError(
            f"{name} file {path} was written for the features {list(features)}, "
            f"the code computes {list(expected)}: fit it again with {fitted_by}"
        )
    size = len(nodes["feature"])
    feature, left, right = (nodes[key].astype(int) for key in ("feature", "left", "right"))
    inner = feature >= 0
    if (
        any(len(column) != size or not np.isfinite(column).all() for column in nodes.values())
        or not len(roots)
        or ((roots < 0) | (roots >= size)).any()
        or (feature >= len(features)).any()
        or ((left[inner] <= np.flatnonzero(inner)) | (left[inner] >= size)).any()
        or ((right[inner] <= np.flatnonzero(inner)) | (right[inner] >= size)).any()
    ):
        raise SetupError(
            f"{name} file {path}: its trees are malformed (every node list needs one finite "
            "number per node; a split's children come after it, inside the node lists)"
        )
    trees = TreeRanker(features, feature, nodes["threshold"], left, right, nodes["value"], roots)
    return trees, data


@lru_cache(maxsize=1)
def shipped_ranker() -> TreeRanker:
    """The shipped ranker, read once per process."""
    return load_ranker()


@dataclass(frozen=True)
class RankInputs:
    """What graph search holds when it ranks: the question and its vector, the first searches, the
    linked seeds, the neighbourhood, the walk, hybrid's ranking (``protected``) and the in-process
    copy of the chunks, when the search has one."""

    query: str
    vector: Sequence[float]
    first: FirstHits
    seeds: Mapping[str, Mapping]
    hood: Neighbourhood
    walked: Walk
    protected: Sequence[str]
    mirror: ChunkMirror | None = None
    """The store state's in-process copy (only without a filter): the pool's rows are read from it."""


def pool_features(
    index: ChunkIndex, held: RankInputs, *, k: int, keep_first: int, keep_in_top: int, expr: str | None
) -> tuple[list[str], np.ndarray]:
    """The candidates to rank and their signals (``candidates.FEATURES``, one row each): those of
    ``rank.rank``'s order under ``keep_first`` and ``keep_in_top`` (the order the ranker was
    trained beside), with the first hits and the passages the bridge hop adds
    (``candidates.bridge_hop``). ``bench/graph_ltr.py`` dumps exactly these."""
    walked = held.walked
    assert walked.probabilities is not None
    order = full_order(
        walked.chunks,
        walked.probabilities,
        held.protected,
        k=k,
        keep_first=keep_first,
        keep_in_top=keep_in_top,
    )
    first = held.first
    dense, hybrid = [str(d.id) for d, _ in first.dense], [str(d.id) for d, _ in first.hybrid or []]
    pool = pool_of(order, dense, hybrid, k=k)
    pool += bridge_hop(pool, order, hybrid or dense, held.seeds, held.hood)
    cosines, texts = read_pool(index, pool, held.vector, expr, held.mirror)
    x = candidate_features(
        pool,
        order=order,
        chunks=walked.chunks,
        probabilities=walked.probabilities,
        dense=first.dense,
        hybrid=first.hybrid,
        seeds=held.seeds,
        hood=held.hood,
        cosines=cosines,
        texts=texts,
        question=held.query,
    )
    return pool, x


def learned_ranking(
    index: ChunkIndex,
    ranker: TreeRanker,
    held: RankInputs,
    *,
    k: int,
    keep_first: int,
    keep_in_top: int,
    expr: str | None,
) -> list[tuple[str, float]]:
    """The top ``k`` of graph search's candidates (``pool_features``) by ``ranker``, with its scores
    min-max normalised over the pool and handed out best first.

    The ranker's order is final, since on the tune halves forcing hybrid's top back in afterwards
    cost R@2 and gained no R@5.
    """
    pool, x = pool_features(index, held, k=k, keep_first=keep_first, keep_in_top=keep_in_top, expr=expr)
    scores = ranker.score(x)
    ranked = [pool[i] for i in np.argsort(-scores, kind="stable")]
    handed = np.sort(minmax(scores))[::-1]
    return [(cid, float(score)) for cid, score in zip(ranked[:k], handed[:k], strict=False)]
