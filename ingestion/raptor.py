"""RAPTOR (Sarthi et al. 2024): a tree of summaries over a collection, stored in Milvus.

Level 0 holds the collection's chunks; each higher level holds summaries of
clusters of the level below: embeddings reduced with PCA, clustered with a
Gaussian mixture whose size minimises BIC, and clusters whose text is more
than the summariser reads (``MAX_CLUSTER_CHARS``) clustered again, as the
paper's local clustering does, so that every summary reads all of its
cluster; each cluster is then summarised by the chat model. Every node
carries ``level`` and ``children`` (the ids one level down), so any
summary traces back to its leaves (``leaves_of``). The tree lives in its own
collection, ``<collection>_raptor``, so other methods' searches never see
summaries.

Building is explicit (``rag-graphs raptor build``) and resumable: node ids
hash their children, clustering is seeded, and a summary already stored is
not written again, so a re-run after an interruption only does what is missing.

The tree follows its chunks. A summary reads its children's text, so it must
never outlive them: whenever chunks leave the collection (``ingest --delete``,
a changed or relabelled file replacing its old chunks; ``ChunkIndex`` calls
``rag_graphs.store.derived.forget_derived`` before it deletes them), their leaf copies and every
summary
above them are removed from the tree, not relabelled. Dropping is the simple,
safe choice: a summary's labels are those all its children share
(``shared_labels``), and a recomputed label could only be right if every other
child were still right too. What remains is searched as before; ``raptor build``
writes the missing summaries again. A build also prunes first: leaves whose
chunk is gone or whose labels (tenant, tags, source, file version) differ from
the chunk's are removed with their ancestors and copied again, so a tree built
before this rule, or changed behind its back, is made current by rebuilding.

The tree always ends in one root: after ``max_levels`` clustered levels (or
as soon as clustering merges nothing), the remaining nodes are packed in order
into groups that fit the summariser's budget, two or more a group, level after
level, until one node is left. (The paper recurses "until further clustering
becomes infeasible" and searches whatever top layer results.)

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

from rag_graphs.llm.usage import ModelUsage
from rag_graphs.prompts import load_prompt
from rag_graphs.prompts.fencing import fence
from rag_graphs.store.fields import TAGS_FIELD, TENANT_FIELD
from rag_graphs.store.index import ChunkIndex, open_index
from rag_graphs.store.tree import forget_chunks, tree_collection
from rag_graphs.support.progress import progress_bar

MAX_CLUSTER_CHARS = 6000  # text of one cluster given to the summariser
REDUCED_DIMS = 10
MAX_CLUSTERS = 50
LEAF_LABELS = (TENANT_FIELD, TAGS_FIELD, "source", "doc_hash")
"""What a leaf copy must share with its chunk to stay in the tree (access labels, file version)."""


@dataclass
class RaptorReport(ModelUsage):
    """What one build did (and its model calls: ``ModelUsage``)."""

    leaves: int = 0
    nodes_per_level: list[int] = field(default_factory=list)
    summaries_written: int = 0
    seconds: float = 0.0
    pruned: int = 0
    """Stale nodes removed before building: leaves whose chunk is gone or relabelled, and
    every summary above them."""

    def summary(self) -> str:
        levels = ", ".join(f"level {i}: {n}" for i, n in enumerate(self.nodes_per_level))
        stale = f"; {self.pruned} stale nodes removed" if self.pruned else ""
        return (
            f"RAPTOR tree: {levels}; {self.summaries_written} new summaries{stale}; {self.spent()}; "
            f"{self.seconds:.1f}s"
        )


def _mixture_groups(vectors: np.ndarray, seed: int, components: int | None = None) -> list[list[int]]:
    """PCA to a few dimensions, then the Gaussian mixture with the lowest BIC (or ``components``)."""
    from sklearn.decomposition import PCA
    from sklearn.mixture import GaussianMixture

    n = len(vectors)
    distinct = len(np.unique(np.round(vectors, 6), axis=0))  # identical texts embed identically
    if n <= 2 or distinct <= 1:
        return [list(range(n))]
    dims = max(1, min(REDUCED_DIMS, n - 2, vectors.shape[1]))
    reduced = PCA(n_components=dims, random_state=seed).fit_transform(vectors)
    candidates = [components] if components else range(1, min(MAX_CLUSTERS, n // 2, distinct) + 1)
    best, best_bic = None, np.inf
    for k in candidates:
        gmm = GaussianMixture(n_components=min(k, distinct), random_state=seed, reg_covar=1e-4).fit(reduced)
        bic = gmm.bic(reduced)
        if bic < best_bic:
            best, best_bic = gmm, bic
    assert best is not None  # the loop ran at least once: k >= 1
    labels = best.predict(reduced)
    return [list(map(int, np.flatnonzero(labels == label))) for label in sorted(set(labels))]


def cluster(
    vectors: np.ndarray,
    *,
    sizes: list[int] | None = None,
    max_chars: int = MAX_CLUSTER_CHARS,
    seed: int = 0,
) -> list[list[int]]:
    """Groups of row indices; with ``sizes`` (each row's text length), each group holds at most
    ``max_chars`` of text unless it is a single row.

    A group over the budget is clustered again on its own rows (the paper's
    local clustering). When BIC keeps all rows together, they are split into
    as many mixture components as the budget needs (halved in order when the
    rows cannot be told apart), so every call recurses on fewer rows.
    """
    groups = _mixture_groups(vectors, seed)
    if sizes is None:
        return groups
    total = sum(sizes)
    if len(groups) == 1 and len(vectors) > 1 and total > max_chars:
        groups = _mixture_groups(vectors, seed, components=min(len(vectors), -(-total // max_chars)))
        if len(groups) == 1:
            half = len(vectors) // 2
            groups = [list(range(half)), list(range(half, len(vectors)))]
    out: list[list[int]] = []
    for group in groups:
        if len(group) > 1 and sum(sizes[i] for i in group) > max_chars:
            rows = np.asarray(group)
            parts = cluster(vectors[rows], sizes=[sizes[i] for i in group], max_chars=max_chars, seed=seed)
            out.extend([int(rows[i]) for i in part] for part in parts)
        else:
            out.append(group)
    return out


def pack(sizes: list[int], max_chars: int) -> list[list[int]]:
    """Consecutive rows packed into groups of at most ``max_chars`` of text and at least two
    rows each (a last single row joins the group before it), so every call on two or more
    rows merges some: the levels that make sure a tree ends in one root."""
    groups: list[list[int]] = []
    current: list[int] = []
    used = 0
    for i, size in enumerate(sizes):
        if len(current) >= 2 and used + size > max_chars:
            groups.append(current)
            current, used = [], 0
        current.append(i)
        used += size
    if len(current) == 1 and groups:
        groups[-1].extend(current)
    elif current:
        groups.append(current)
    return groups


def _node_id(level: int, children: list[str]) -> str:
    return hashlib.sha256(f"raptor|{level}|{'|'.join(sorted(children))}".encode()).hexdigest()[:32]


def _summarize(
    model: BaseChatModel, texts: list[str], usage: ModelUsage, max_chars: int = MAX_CLUSTER_CHARS
) -> str:
    """The model's summary of ``texts``, fenced as data (its call counted on ``usage``); a
    single text longer than the budget (a lone oversized chunk) is cut to it."""
    passages, used = [], 0
    for text in texts:
        if used + len(text) > max_chars:
            text = text[: max(0, max_chars - used)]
        if text:
            passages.append(fence(text))
            used += len(text)
    reply = model.invoke(load_prompt("raptor_summary").format_messages(passages="\n".join(passages)))
    usage.count([reply])
    return str(reply.content).strip() or " ".join(texts)[:500]


def build_tree(
    source: ChunkIndex,
    model: BaseChatModel,
    *,
    max_levels: int = 3,
    cluster_chars: int = MAX_CLUSTER_CHARS,
    seed: int = 0,
    progress: bool = True,
) -> RaptorReport:
    """Build (or finish building) the RAPTOR tree of ``source`` into ``<collection>_raptor``.

    ``cluster_chars`` is the text one summary reads: clusters are split until
    they fit it (raise it for models with long contexts: fewer, broader summaries).
    ``max_levels`` levels are clustered; further levels ``pack`` nodes until one root is left.

    Raises:
        ValueError: the source collection is empty.
    """
    start = time.perf_counter()
    leaves = source.iter_chunks()
    if not leaves:
        raise ValueError(f"collection {source.collection!r} at {source.uri} is empty: ingest documents first")
    tree = open_index(source.uri, tree_collection(source.collection), source.embeddings, hybrid=source.hybrid)
    report = RaptorReport(leaves=len(leaves), nodes_per_level=[len(leaves)])
    report.pruned = forget_chunks(tree, _stale_leaves(tree, {str(d.id): d for d, _ in leaves}))
    copies = [
        Document(
            page_content=d.page_content, metadata={**d.metadata, "chunk_id": d.id, "level": 0, "children": []}
        )
        for d, _ in leaves
    ]
    tree.add(copies, vectors=[v for _, v in leaves])  # leaves keep their stored vectors
    nodes = [d for d, _ in leaves]
    vectors = np.array([v for _, v in leaves], dtype=float)
    level = 0
    while len(nodes) > 1:
        level += 1
        sizes = [len(n.page_content) for n in nodes]
        groups = (
            cluster(vectors, sizes=sizes, max_chars=cluster_chars, seed=seed) if level <= max_levels else []
        )
        if len(groups) in (0, len(nodes)):  # past max_levels, or clustering merged nothing: pack
            groups = pack(sizes, cluster_chars)
        made = []
        for group in progress_bar(groups, desc=f"RAPTOR level {level}", unit="cluster", disable=not progress):
            children = [nodes[i] for i in group]
            node_id = _node_id(level, [str(c.id) for c in children])
            stored = tree.get([node_id])
            if stored:
                made.append(stored[0])
                continue
            text = _summarize(model, [c.page_content for c in children], report, cluster_chars)
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


def _stale_leaves(tree: ChunkIndex, chunks: dict[str, Document]) -> list[str]:
    """Ids of the tree's leaves whose chunk is gone or carries other labels (``LEAF_LABELS``)."""
    stale = []
    for node, _ in tree.iter_chunks():
        if node.metadata.get("level") != 0:
            continue
        chunk = chunks.get(str(node.id))
        if chunk is None or any(node.metadata.get(f) != chunk.metadata.get(f) for f in LEAF_LABELS):
            stale.append(str(node.id))
    return stale
