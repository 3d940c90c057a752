"""Communities of the entity graph: Leiden's partition, its hierarchy, determinism and access scopes."""

from __future__ import annotations

import random

from langchain_core.documents import Document

from rag_graphs.entity_graph.communities import (
    ChunkEntities,
    communities,
    cooccurrence_edges,
    detect,
)


def _clusters(tenant: str | None = None) -> list[ChunkEntities]:
    """Two clusters of entities no chunk links, a chunk naming one lone entity and one naming none."""
    x = ("ada", "babbage", "engine", "notes")
    y = ("korvik", "lunmar", "harbour", "osterby")
    return [
        ChunkEntities("x1", x[:3], tenant),
        ChunkEntities("x2", x[1:], tenant),
        ChunkEntities("x3", (x[0], x[3]), tenant),
        ChunkEntities("y1", y[:3], tenant),
        ChunkEntities("y2", y[1:], tenant),
        ChunkEntities("lone", ("zebra",), tenant),
        ChunkEntities("bare", (), tenant),
    ]


def _paired_groups(groups: int = 12) -> list[ChunkEntities]:
    """``groups`` components, each two 4-entity cliques joined by two chunks: Leiden keeps each
    component whole, and with at most 4 entities a community splits it in its two cliques."""
    chunks = []
    for g in range(groups):
        for half in "ab":
            names = tuple(f"g{g}{half}{i}" for i in range(4))
            chunks += [ChunkEntities(f"c{g}{half}1", names), ChunkEntities(f"c{g}{half}2", names)]
        chunks += [
            ChunkEntities(f"c{g}x", (f"g{g}a0", f"g{g}b0")),
            ChunkEntities(f"c{g}y", (f"g{g}a1", f"g{g}b1")),
        ]
    return chunks


def test_two_separate_clusters_are_two_communities_covering_their_chunks():
    partition = detect(_clusters())
    found = sorted((c.entities, c.chunks) for c in partition.communities)
    assert found == [
        (("ada", "babbage", "engine", "notes"), ("x1", "x2", "x3")),
        (("harbour", "korvik", "lunmar", "osterby"), ("y1", "y2")),
    ]
    assert partition.levels() == [2] and partition.scopes == 1
    assert partition.uncovered == 2  # "lone" names an entity no other chunk names; "bare" none
    assert all(c.level == 0 and c.parent == "" for c in partition.communities)


def test_cooccurrence_weights_count_the_chunks_naming_both():
    edges = cooccurrence_edges(
        [ChunkEntities("1", ("a", "b")), ChunkEntities("2", ("b", "a", "c")), ChunkEntities("3", ("c",))]
    )
    assert edges == [("a", "b", 2.0), ("a", "c", 1.0), ("b", "c", 1.0)]


def test_leiden_is_deterministic_with_a_seed_whatever_order_the_rows_come_in():
    chunks = _paired_groups()
    first = detect(chunks, max_cluster_size=4, seed=7).communities
    shuffled = list(chunks)
    random.Random(3).shuffle(shuffled)
    again = detect(shuffled, max_cluster_size=4, seed=7).communities
    assert [(c.id, c.parent, c.entities, c.chunks) for c in first] == [
        (c.id, c.parent, c.entities, c.chunks) for c in again
    ]


def test_big_communities_split_into_a_hierarchy_whose_parents_hold_every_chunk_below():
    partition = detect(_paired_groups(), max_cluster_size=4)
    assert partition.levels() == [24, 12]
    by_id = {c.id: c for c in partition.communities}
    for top in (c for c in partition.communities if c.level == 1):
        assert top.parent == "" and len(top.children) == 2
        below = {cid for child in top.children for cid in by_id[child].chunks}
        assert below <= set(top.chunks) and all(by_id[child].parent == top.id for child in top.children)
        assert len(top.entities) == 8
    level0 = [c for c in partition.communities if c.level == 0]
    chunk_lists = [cid for c in level0 for cid in c.chunks]
    assert len(chunk_lists) == len(set(chunk_lists)) == len(_paired_groups())  # disjoint, all covered


def test_tenants_never_share_a_community_and_each_carries_its_scope_labels():
    """The same entities in tenants A and B, and a tag set of A's: three scopes, no mixing."""
    tagged = [ChunkEntities(f"t{c.id}", c.entities, "A", ("hr",)) for c in _clusters()]
    chunks = _clusters("A") + [ChunkEntities(f"b{c.id}", c.entities, "B") for c in _clusters()] + tagged
    tenant = {c.id: (c.tenant, c.tags) for c in chunks}
    partition = detect(chunks)
    assert partition.scopes == 3 and len(partition.communities) == 6
    for community in partition.communities:
        assert {tenant[cid] for cid in community.chunks} == {(community.tenant, community.tags)}
    assert sorted({(c.tenant, c.tags) for c in partition.communities}) == [
        ("A", ()),
        ("A", ("hr",)),
        ("B", ()),
    ]


def test_communities_read_entities_and_labels_from_the_chunk_rows(index):
    docs = [
        Document(
            page_content=f"text of {c.id}",
            metadata={"chunk_id": c.id, "source": "s.md", "entities": list(c.entities), "tenant": "A"},
        )
        for c in _clusters()
    ]
    index.add(docs)
    partition = communities(index)
    assert sorted(c.chunks for c in partition.communities) == [("x1", "x2", "x3"), ("y1", "y2")]
    assert {c.tenant for c in partition.communities} == {"A"}
