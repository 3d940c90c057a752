"""RAPTOR (Sarthi et al. 2024): a tree of summaries over a collection, stored in Milvus.

Level 0 holds the collection's chunks; each higher level holds summaries of
clusters of the level below: embeddings reduced with PCA, clustered with a
Gaussian mixture whose size minimises BIC, each cluster summarised by the
chat model. Every node carries ``level`` and ``children`` (the ids one level
down), so any summary traces back to its leaves (``leaves_of``). The tree
lives in its own collection, ``<collection>_raptor``, so other methods'
searches never see summaries.

Building is explicit (``rag-graphs raptor build``) and resumable: node ids
hash their children, clustering is seeded, and a summary already stored is
not written again, so a re-run after an interruption only does what is missing.

Deviation from the paper: PCA instead of UMAP (UMAP pulls in numba and is
not deterministic across machines), and each node joins one cluster (the
paper's soft assignment lets a node join several).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field

import numpy as np
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from tqdm.auto import tqdm

from ingestion.store import TAGS_FIELD, TENANT_FIELD, ChunkIndex, open_index
from prompts import load_prompt
from prompts.fencing import fence

MAX_CLUSTER_CHARS = 6000  # text of one cluster given to the summariser
REDUCED_DIMS = 10
MAX_CLUSTERS = 50


def tree_collection(collection: str) -> str:
    """The collection that holds ``collection``'s RAPTOR tree."""
    return f"{collection}_raptor"


@dataclass
class RaptorReport:
    """What one build did."""

    leaves: int = 0
    nodes_per_level: list[int] = field(default_factory=list)
    summaries_written: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        levels = ", ".join(f"level {i}: {n}" for i, n in enumerate(self.nodes_per_level))
        return f"RAPTOR tree: {levels}; {self.summaries_written} new summaries in {self.seconds:.1f}s"


def cluster(vectors: np.ndarray, *, seed: int = 0) -> list[list[int]]:
    """Groups of row indices: PCA to a few dimensions, then the Gaussian mixture with the lowest BIC."""
    from sklearn.decomposition import PCA
    from sklearn.mixture import GaussianMixture

    n = len(vectors)
    distinct = len(np.unique(np.round(vectors, 6), axis=0))  # identical texts embed identically
    if n <= 2 or distinct <= 1:
        return [list(range(n))]
    dims = max(1, min(REDUCED_DIMS, n - 2, vectors.shape[1]))
    reduced = PCA(n_components=dims, random_state=seed).fit_transform(vectors)
    best, best_bic = None, np.inf
    for k in range(1, min(MAX_CLUSTERS, n // 2, distinct) + 1):
        gmm = GaussianMixture(n_components=k, random_state=seed, reg_covar=1e-4).fit(reduced)
        bic = gmm.bic(reduced)
        if bic < best_bic:
            best, best_bic = gmm, bic
    labels = best.predict(reduced)
    return [list(np.flatnonzero(labels == label)) for label in sorted(set(labels))]


def _node_id(level: int, children: list[str]) -> str:
    return hashlib.sha256(f"raptor|{level}|{'|'.join(sorted(children))}".encode()).hexdigest()[:32]


def _summarize(model: BaseChatModel, texts: list[str]) -> str:
    passages, used = [], 0
    for text in texts:
        if used + len(text) > MAX_CLUSTER_CHARS:
            text = text[: max(0, MAX_CLUSTER_CHARS - used)]
        if text:
            passages.append(fence(text))
            used += len(text)
    reply = model.invoke(load_prompt("raptor_summary").format_messages(passages="\n".join(passages)))
    return str(reply.content).strip() or " ".join(texts)[:500]


def build_tree(
    source: ChunkIndex, model: BaseChatModel, *, max_levels: int = 3, seed: int = 0, progress: bool = True
) -> RaptorReport:
    """Build (or finish building) the RAPTOR tree of ``source`` into ``<collection>_raptor``.

    Raises:
        ValueError: the source collection is empty.
    """
    start = time.perf_counter()
    leaves = source.iter_chunks()
    if not leaves:
        raise ValueError(f"collection {source.collection!r} at {source.uri} is empty: ingest documents first")
    tree = open_index(source.uri, tree_collection(source.collection), source.embeddings, hybrid=source.hybrid)
    report = RaptorReport(leaves=len(leaves), nodes_per_level=[len(leaves)])
    copies = [
        Document(
            page_content=d.page_content, metadata={**d.metadata, "chunk_id": d.id, "level": 0, "children": []}
        )
        for d, _ in leaves
    ]
    tree.add(copies, vectors=[v for _, v in leaves])  # leaves keep their stored vectors
    nodes = [d for d, _ in leaves]
    vectors = np.array([v for _, v in leaves], dtype=float)
    for level in range(1, max_levels + 1):
        if len(nodes) <= 1:
            break
        groups = cluster(vectors, seed=seed)
        if len(groups) == len(nodes):  # nothing merged: the tree cannot grow further
            break
        made = []
        for group in tqdm(groups, desc=f"RAPTOR level {level}", unit="cluster", disable=not progress):
            children = [nodes[i] for i in group]
            node_id = _node_id(level, [str(c.id) for c in children])
            stored = tree.get([node_id])
            if stored:
                made.append(stored[0])
                continue
            text = _summarize(model, [c.page_content for c in children])
            meta = {
                "chunk_id": node_id,
                "level": level,
                "children": [str(c.id) for c in children],
                "kind": "summary",
                "source": f"raptor:{source.collection}",
                "page": -1,
                "crefs": [],
                **shared_labels(children),
            }
            tree.add([Document(page_content=text, metadata=meta)])
            report.summaries_written += 1
            made.append(Document(id=node_id, page_content=text, metadata=meta))
        nodes = made
        vectors = np.array(source.embeddings.embed_documents([n.page_content for n in nodes]), dtype=float)
        report.nodes_per_level.append(len(nodes))
    tree.flush()
    report.seconds = time.perf_counter() - start
    return report


def shared_labels(children: list[Document]) -> dict:
    """The access labels a summary may carry: only those every child carries.

    A summary reads its children's text, so it must be no easier to reach than
    the most restricted child: a mixed-tenant cluster's summary has no tenant
    (a tenant-filtered search never sees it), and its tags are the common ones.
    """
    labels: dict = {}
    tenants = {c.metadata.get(TENANT_FIELD) for c in children}
    if len(tenants) == 1 and None not in tenants:
        labels[TENANT_FIELD] = tenants.pop()
    tag_sets = [set(c.metadata.get(TAGS_FIELD) or []) for c in children]
    common = set.intersection(*tag_sets) if tag_sets else set()
    if common:
        labels[TAGS_FIELD] = sorted(common)
    return labels


def leaves_of(tree: ChunkIndex, node_id: str) -> list[Document]:
    """The level-0 chunks under a tree node (the node itself when it is a leaf)."""
    frontier, leaves = [node_id], []
    while frontier:
        nodes = tree.get(frontier)
        frontier = []
        for node in nodes:
            children = list(node.metadata.get("children") or [])
            if children:
                frontier.extend(children)
            else:
                leaves.append(node)
    return leaves
