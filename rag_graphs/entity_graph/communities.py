"""Communities of the entity graph, for GraphRAG's community reports (Edge et al. 2024).

The graph: entities are nodes, two entities are linked when a chunk names both, the link weighted by
how many chunks do (the chunk-entity incidence matrix times its transpose, on scipy sparse
matrices). Hierarchical Leiden (``graspologic_native.hierarchical_leiden``, seeded, so the same
graph gives the same communities) splits it: first a partition of the whole graph, then every
community of more than ``max_cluster_size`` entities is partitioned again, level after level.
graspologic-native (1.1 MB, Rust, hierarchical by itself) was picked over leidenalg + igraph
(~25 MB, one level per call, the hierarchy left to us); BENCHMARKS.md "Community reports" has
the timings.

Levels here count up from the finest: a community that was not split is level 0, its parent is one
above the highest of its children, so reports are built bottom-up in level order. Each chunk joins
the finest community holding most of its entities (ties: the smaller community id), so at every
level the communities' chunks are disjoint: deleting a chunk drops one report per level, and a
question over a scope meets every chunk that names a linked entity. Chunks naming no entity, or
only entities no other chunk names, are in no community (``Partition.uncovered`` counts them).

Access scopes: a report is written from its chunks' text, so the graphrag method shows it only to a
run whose filter admits all of them. A report mixing tenants A and B would be readable by nobody
filtered to A, and a tenant's global question must still cover that tenant's whole corpus; so the
graph is split into scopes first and Leiden runs per scope: one per (tenant, tag set) pair that
ingest stores together (chunks without a tenant form their own scope). Every report then carries
its scope's labels exactly, and a run filtered to a tenant, or to any tags, admits whole scopes:
it sees every report of the chunks it may read. The price is that an entity named in two scopes
is two nodes, and links across scopes are not followed. A ``sources`` or ``search_filter``
restriction is not a scope (one scope per file would leave no graph): such a run admits only the
reports that lie wholly inside it, and the graphrag method must say so or fall back.

Communities are not stored on their own: Leiden is recomputed from the chunk rows at each build
(seconds; see BENCHMARKS.md) and each community lives as its report row (``rag_graphs.store.reports``:
level, parent, entities, chunks, labels), so there is no second partition to go stale.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from rag_graphs.store.fields import ENTITIES_FIELD, PRIMARY_FIELD, TAGS_FIELD, TENANT_FIELD
from rag_graphs.store.index import ChunkIndex
from rag_graphs.store.reports import report_id

MAX_CLUSTER_SIZE = 10
"""Entities a community may hold before Leiden splits it again (GraphRAG's default is 10)."""
SEED = 0xDEE
MAX_REPORT_CHUNKS = 4096
"""Chunks a community may hold and still get a report: its row lists every one (for the access and
delete rules), and one row's metadata must stay small. A bigger community (a scope's coarsest
levels on a large corpus) gets none; its sub-communities' reports cover its chunks."""


@dataclass(frozen=True)
class ChunkEntities:
    """What the partition needs of one chunk row: its id, its entity keys and its access labels."""

    id: str
    entities: tuple[str, ...]
    tenant: str | None = None
    tags: tuple[str, ...] = ()

    @property
    def scope(self) -> tuple[str | None, tuple[str, ...]]:
        return (self.tenant, self.tags)


@dataclass(frozen=True)
class Community:
    """One community: its id (``report_id`` of its level and chunks), level (0 = finest), parent
    id ("" at the top), member entity keys, member chunk ids (every chunk underneath) and the
    scope's labels, which all those chunks carry."""

    id: str
    level: int
    parent: str
    entities: tuple[str, ...]
    chunks: tuple[str, ...]
    tenant: str | None
    tags: tuple[str, ...]
    children: tuple[str, ...] = ()


@dataclass
class Partition:
    """A build's communities, finest level first, and what they leave out."""

    communities: list[Community] = field(default_factory=list)
    scopes: int = 0
    uncovered: int = 0
    """Chunks in no community: no entity, or only entities no other chunk of the scope names."""
    too_big: int = 0
    """Communities left without a report: more than ``MAX_REPORT_CHUNKS`` chunks."""

    def levels(self) -> list[int]:
        """How many communities each level holds, level 0 first."""
        counts = Counter(c.level for c in self.communities)
        return [counts[level] for level in range(max(counts, default=-1) + 1)]


def read_chunk_entities(index: ChunkIndex, *, batch_size: int = 2000) -> list[ChunkEntities]:
    """Every chunk's id, entities and labels, without text or vectors, as readers see the chunks
    (a version of a file being replaced on a server is not read: a report is written from what a
    reader may be shown)."""
    fields = [PRIMARY_FIELD, ENTITIES_FIELD, TENANT_FIELD, TAGS_FIELD]
    return [
        ChunkEntities(
            id=str(row[PRIMARY_FIELD]),
            entities=tuple(dict.fromkeys(row.get(ENTITIES_FIELD) or [])),
            tenant=row.get(TENANT_FIELD),
            tags=tuple(sorted(row.get(TAGS_FIELD) or [])),
        )
        for row in index.chunks.scan(fields, batch_size=batch_size)
    ]


def cooccurrence_edges(chunks: Iterable[ChunkEntities]) -> list[tuple[str, str, float]]:
    """Entity pairs named by the same chunks, weighted by how many (sorted, so Leiden's input is
    the same whatever order the store returned the rows in)."""
    import numpy as np
    from scipy.sparse import csr_matrix, triu

    keys: dict[str, int] = {}
    rows, cols = [], []
    for i, chunk in enumerate(chunks):
        for key in chunk.entities:
            rows.append(i)
            cols.append(keys.setdefault(key, len(keys)))
    if not keys:
        return []
    incidence = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(max(rows) + 1, len(keys)))
    pairs = triu(incidence.T @ incidence, k=1).tocoo()
    names = list(keys)
    edges = [(names[a], names[b], float(w)) for a, b, w in zip(pairs.row, pairs.col, pairs.data, strict=True)]
    return sorted((min(a, b), max(a, b), w) for a, b, w in edges)


def _leiden(edges: list[tuple[str, str, float]], *, seed: int, max_cluster_size: int) -> dict:
    """(graspologic level, cluster) -> (parent (level, cluster) or None, member entities)."""
    from graspologic_native import hierarchical_leiden

    clusters: dict[tuple[int, int], tuple[tuple[int, int] | None, set[str]]] = {}
    for entry in hierarchical_leiden(edges, max_cluster_size=max_cluster_size, seed=seed):
        key = (entry.level, entry.cluster)
        parent = None if entry.parent_cluster is None else (entry.level - 1, entry.parent_cluster)
        clusters.setdefault(key, (parent, set()))[1].add(entry.node)
    return clusters


def detect(
    chunks: list[ChunkEntities], *, seed: int = SEED, max_cluster_size: int = MAX_CLUSTER_SIZE
) -> Partition:
    """The communities of ``chunks``' entity graph, one hierarchy per access scope."""
    partition = Partition()
    scopes: dict[tuple[str | None, tuple[str, ...]], list[ChunkEntities]] = {}
    for chunk in chunks:
        scopes.setdefault(chunk.scope, []).append(chunk)
    partition.scopes = len(scopes)
    for scope in sorted(scopes, key=lambda s: (s[0] or "", s[0] is not None, s[1])):
        found, uncovered, too_big = _scope_communities(
            scopes[scope], seed=seed, max_cluster_size=max_cluster_size
        )
        partition.communities += found
        partition.uncovered += uncovered
        partition.too_big += too_big
    partition.communities.sort(key=lambda c: (c.level, c.id))
    return partition


def _scope_communities(
    chunks: list[ChunkEntities], *, seed: int, max_cluster_size: int
) -> tuple[list[Community], int, int]:
    """One scope's communities (all its chunks share tenant and tags), its uncovered chunks and
    how many communities were too big for a report."""
    edges = cooccurrence_edges(chunks)
    if not edges:
        return [], len(chunks), 0
    clusters = _leiden(edges, seed=seed, max_cluster_size=max_cluster_size)
    children: dict[tuple[int, int], list[tuple[int, int]]] = {key: [] for key in clusters}
    for key, (parent, _) in clusters.items():
        if parent is not None and parent in children:
            children[parent].append(key)
    finest = {
        entity: key for key, (_, members) in clusters.items() if not children[key] for entity in members
    }
    members_of: dict[tuple[int, int], set[str]] = {key: set() for key in clusters}
    uncovered = 0
    for chunk in chunks:
        votes = Counter(finest[e] for e in chunk.entities if e in finest)
        if not votes:
            uncovered += 1
            continue
        best = max(votes.items(), key=lambda kv: (kv[1], -kv[0][0], -kv[0][1]))[0]
        at: tuple[int, int] | None = best
        while at is not None:  # a chunk of a community is a chunk of every community above it
            members_of[at].add(chunk.id)
            at = clusters[at][0]
    tenant, tags = chunks[0].scope
    built: dict[tuple[int, int], Community] = {}
    too_big = 0

    def build(key: tuple[int, int]) -> Community | None:
        """The community at ``key`` (its children first), or None when it has no chunk or too many;
        a parent with the same chunks as its only child is that child (no second report of one text)."""
        nonlocal too_big
        subs = [c for c in (build(k) for k in sorted(children[key])) if c is not None]
        chunk_ids = tuple(sorted(members_of[key]))
        if len(chunk_ids) > MAX_REPORT_CHUNKS:
            too_big += 1
            return None
        if not chunk_ids:
            return None
        if len(subs) == 1 and subs[0].chunks == chunk_ids:
            return subs[0]
        level = 1 + max(c.level for c in subs) if subs else 0
        built[key] = Community(
            id=report_id(level, list(chunk_ids)),
            level=level,
            parent="",
            entities=tuple(sorted(clusters[key][1])),
            chunks=chunk_ids,
            tenant=tenant,
            tags=tags,
            children=tuple(c.id for c in subs),
        )
        return built[key]

    tops = [key for key, (parent, _) in clusters.items() if parent is None or parent not in clusters]
    for key in sorted(tops):
        build(key)
    by_id = {c.id: c for c in built.values()}
    parents = {child: c.id for c in by_id.values() for child in c.children}
    found = [_with_parent(c, parents.get(c.id, "")) for c in by_id.values()]
    return found, uncovered, too_big


def _with_parent(community: Community, parent: str) -> Community:
    from dataclasses import replace

    return replace(community, parent=parent)


def communities(
    index: ChunkIndex, *, seed: int = SEED, max_cluster_size: int = MAX_CLUSTER_SIZE
) -> Partition:
    """The communities of the entity graph stored on ``index``'s chunk rows."""
    return detect(read_chunk_entities(index), seed=seed, max_cluster_size=max_cluster_size)
