"""Passages and facts in the graph walk, reset weights from dense scores, and the never-lose fusion."""

from __future__ import annotations

import hashlib
import math
import re

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from rag_graphs.entity_graph import walk
from rag_graphs.entity_graph.build import add_entities
from rag_graphs.entity_graph.entities import annotate
from rag_graphs.entity_graph.facts import Fact, fact_seed_weights, link_facts, named_in
from rag_graphs.entity_graph.ppr import graph_search
from rag_graphs.entity_graph.walk import build_walk_graph, fuse, pagerank, restart_shares
from rag_graphs.store import ChunkIndex
from rag_graphs.store.sentences import build_sentences

STOP = set("a an and the is was of in its who which where what to by".split())


class BagOfWords(Embeddings):
    """Texts that share content words get similar vectors (a tiny stand-in for a sentence
    embedder, so that "the sentence most like the question" means something here)."""

    size = 512

    def _vector(self, text: str) -> list[float]:
        v = [0.0] * self.size
        for word in re.findall(r"[a-z]+", text.lower()):
            if word not in STOP:
                v[int(hashlib.sha1(word.encode()).hexdigest(), 16) % self.size] += 1.0
        norm = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / norm for x in v]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


NAMES = ["Ilsa Brandt", "Korvik", "Osric Vale", "Arden Moss", "Lunmar", "Velm", "Hessa", "Tarn Guild"]
PASSAGES = {
    "p1": ("Ilsa Brandt", "Ilsa Brandt, a painter, was born in Korvik. She left it young."),
    "p2": ("Korvik", "Korvik is a harbour on the north coast. Osric Vale holds office there."),  # hop two
    "d1": ("Arden Moss", "Arden Moss was the mayor of Lunmar, a town on the coast."),
    "d2": ("Velm", "Velm is a town with a river. Velm exports granite and wool by the river."),
    "d3": ("Hessa", "Hessa is the river in Velm that floods in spring."),
    "d4": ("Tarn Guild", "The Tarn Guild trades granite in Velm, in Lunmar and in Korvik."),
}
TWO_HOP = "Who is the mayor of the town where Ilsa Brandt was born?"
ONE_HOP = "Which town exports granite and wool?"


def names(texts: list[str]) -> list[list[str]]:
    return [[n for n in NAMES if n in t] for t in texts]


@pytest.fixture
def corpus(store_uri: str) -> ChunkIndex:
    """The tiny corpus with its entity graph and its sentence rows (the facts)."""
    index = ChunkIndex(uri=store_uri, collection="walk", embeddings=BagOfWords())
    docs = [
        Document(
            page_content=f"{title}\n{text}",
            metadata={"chunk_id": cid, "source": f"corpus/{title}", "title": title, "kind": "text"},
        )
        for cid, (title, text) in PASSAGES.items()
    ]
    found = annotate(docs, names)
    index.add(docs)
    add_entities(index, docs, found)
    index.flush()
    build_sentences(index)
    return index


def ids(hits) -> list[str]:
    return [str(d.id) for d, _ in hits]


def test_fact_nodes_sit_in_the_neighbourhood_linked_to_passage_and_entities(corpus):
    hybrid = corpus.search(TWO_HOP, k=6, mode="hybrid")
    plain = graph_search(corpus, TWO_HOP, k=6, dense_hits=hybrid, extractor=None)
    facts = graph_search(corpus, TWO_HOP, k=6, dense_hits=hybrid, extractor=None, fact_k=3)
    assert plain.facts == 0 and facts.facts == 3
    assert facts.chunks >= plain.chunks and "3 facts" in facts.describe()
    # p1's first sentence matches the question best and names Korvik: a seed through the fact
    assert "Korvik" in [name for name, _ in facts.seeds]


def test_the_walk_ranks_the_chains_second_passage_above_a_distractor(corpus):
    hybrid = corpus.search(TWO_HOP, k=6, mode="hybrid")
    assert ids(hybrid).index("d2") < ids(hybrid).index("p2")  # "a town with a river" wins lexically
    for fusion in (0.0,):
        found = graph_search(
            corpus, TWO_HOP, k=6, dense_hits=hybrid, extractor=None, fact_k=3, hybrid_weight=fusion
        )
        ranked = ids(found.hits)
        assert ranked[0] == "p1" and ranked.index("p2") < ranked.index("d2"), fusion


def test_fusion_keeps_a_one_hop_questions_best_hybrid_hit_first(corpus):
    hybrid = corpus.search(ONE_HOP, k=6, mode="hybrid")
    assert ids(hybrid)[0] == "d2"
    walk = graph_search(corpus, ONE_HOP, k=6, dense_hits=hybrid, extractor=None, fact_k=3)
    assert ids(walk.hits)[0] == "d4"  # the walk alone prefers the Tarn Guild, linked to every town
    fused = graph_search(corpus, ONE_HOP, k=6, dense_hits=hybrid, extractor=None, fact_k=3, hybrid_weight=1.0)
    assert ids(fused.hits)[0] == "d2"
    scores = [s for _, s in fused.hits]
    assert scores == sorted(scores, reverse=True)
    # the walk seeded by dense hits (only two here), fused with a separate hybrid ranking
    dense = corpus.search(ONE_HOP, k=2, mode="dense")
    both = graph_search(
        corpus, ONE_HOP, k=6, dense_hits=dense, fuse_hits=hybrid, extractor=None, fact_k=3, hybrid_weight=1.0
    )
    assert ids(both.hits)[0] == "d2" and set(ids(hybrid)) <= set(ids(both.hits))


def test_facts_of_hidden_or_deleted_chunks_lead_nowhere(corpus):
    corpus.delete_source("corpus/Ilsa Brandt")
    found = graph_search(corpus, TWO_HOP, k=6, extractor=None, fact_k=5)
    assert "p1" not in ids(found.hits)
    assert "Korvik" not in [name for name, _ in found.seeds] or found.facts <= 5


def test_passage_restart_weights_follow_the_dense_scores():
    shares = restart_shares(np.array([0.9, 0.6, 0.3, 0.0]), 0.05, 2.0)
    assert shares.sum() == pytest.approx(0.1)  # weight x the seeds' total
    assert shares[0] == pytest.approx(3 * shares[2]) and shares[3] == 0
    assert not restart_shares(np.array([0.9, 0.6]), 0.05, 0.0).any()  # no seeds: no walk to weight
    assert not restart_shares(np.array([0.9, 0.6]), 0.0, 2.0).any()


def test_a_higher_dense_score_lifts_a_passage_in_the_walk():
    edges = {"a": ["x"], "b": ["x"], "c": ["y"]}
    graph = build_walk_graph(edges, set())
    reset = np.zeros(graph.size)
    reset[graph.entity_node("x")] = 1.0
    for j, share in enumerate(restart_shares(np.array([0.2, 0.8]), 0.5, 1.0)):
        reset[j] += share  # a: 0.2, b: 0.8
    rank = pagerank(graph.adjacency, reset, damping=0.5)
    assert rank[1] > rank[0] > rank[2] == 0


def test_fact_entities_are_the_names_the_sentence_holds():
    keys = ["korvik", "osric vale", "velm"]
    assert named_in("Osric Vale's harbour, Korvik.", keys) == ["korvik", "osric vale"]
    facts = [Fact("f1", "p1", "She was born in Korvik.", 0.8), Fact("f2", "gone", "Velm too.", 0.9)]
    kept = link_facts(facts, {"p1": ["ilsa brandt", "korvik"]})
    assert [f.id for f in kept] == ["f1"] and kept[0].entities == ["korvik"]
    kept.append(Fact("f3", "p1", "Korvik again.", 0.5, ["korvik"]))
    assert fact_seed_weights(kept) == {"korvik": 0.8}  # the best fact, not a sum


def test_fact_nodes_link_to_their_passage_and_named_entities_only():
    facts = [Fact("f", "a", "x and z", 0.5, ["x", "z"]), Fact("g", "elsewhere", "y", 0.9, ["y"])]
    graph = build_walk_graph({"a": ["x"], "b": ["y"]}, set(), facts)
    assert len(graph.facts) == 1  # g's passage is not in the neighbourhood
    node = graph.fact_node(0)
    linked = set(graph.adjacency[node].indices.tolist())
    assert linked == {0, graph.entity_node("x")}  # z is in no visible passage: no node


def test_fuse_weights_the_first_ranking():
    walk, first = ["b", "c", "a"], ["a", "b", "c"]
    assert [c for c, _ in fuse(walk, first, weight=0)] == walk
    assert [c for c, _ in fuse(walk, first, weight=5)][0] == "a"
    assert [c for c, _ in fuse(walk, first, weight=1)][0] == "b"  # both rank it high


def test_keep_first_protects_hybrids_top_hit_and_the_walk_still_finds_the_second_hop(corpus):
    """The issue's tiny corpus, one setting for both questions: the two-hop chain's second passage
    above the distractor, and the one-hop question's best hybrid hit first."""
    knobs = {"extractor": None, "fact_k": 3, "keep_first": 1}
    hybrid = corpus.search(TWO_HOP, k=6, mode="hybrid")
    ranked = ids(graph_search(corpus, TWO_HOP, k=6, dense_hits=hybrid, **knobs).hits)
    assert ranked[0] == ids(hybrid)[0] == "p1" and ranked.index("p2") < ranked.index("d2")
    assert ids(hybrid).index("d2") < ids(hybrid).index("p2")
    hybrid = corpus.search(ONE_HOP, k=6, mode="hybrid")
    found = graph_search(corpus, ONE_HOP, k=6, dense_hits=hybrid, **knobs)
    assert ids(found.hits)[0] == "d2" and ids(found.hits)[1] == "d4"  # the walk orders the rest
    scores = [s for _, s in found.hits]
    assert scores == sorted(scores, reverse=True)
    two = graph_search(corpus, ONE_HOP, k=6, dense_hits=hybrid, **{**knobs, "keep_first": 2})
    assert ids(two.hits)[:2] == ids(hybrid)[:2]


def test_fuse_depth_fuses_only_hybrids_first_hits(corpus):
    hybrid = corpus.search(ONE_HOP, k=6, mode="hybrid")
    knobs = {"extractor": None, "fact_k": 3, "hybrid_weight": 1.0}
    shallow = ids(graph_search(corpus, ONE_HOP, k=6, dense_hits=hybrid, fuse_depth=1, **knobs).hits)
    walk = ids(graph_search(corpus, ONE_HOP, k=6, dense_hits=hybrid, extractor=None, fact_k=3).hits)
    assert shallow[0] == "d2"  # hybrid's first hit, lifted by the fusion
    assert [c for c in shallow if c != "d2"] == [c for c in walk if c != "d2"]  # the rest: the walk's


def test_passage_nodes_restart_by_their_dense_similarity(corpus):
    hybrid = corpus.search(ONE_HOP, k=6, mode="hybrid")
    knobs = {"extractor": None, "fact_k": 3}
    assert ids(graph_search(corpus, ONE_HOP, k=6, dense_hits=hybrid, **knobs).hits)[0] == "d4"
    found = graph_search(corpus, ONE_HOP, k=6, dense_hits=hybrid, passage_node_weight=0.5, **knobs)
    assert ids(found.hits)[0] == "d2"  # the passage most like the question restarts the walk most


def test_passage_resets_are_weight_times_normalised_similarity():
    resets = walk.passage_resets(np.array([0.2, 0.6, 0.4]), 0.05)
    assert resets == pytest.approx([0.0, 0.05, 0.025])
    assert not walk.passage_resets(np.array([0.2, 0.6]), 0.0).any()
    assert walk.passage_resets(np.array([0.3, 0.3]), 0.1) == pytest.approx([0.1, 0.1])


def test_protect_first_moves_the_first_rankings_top_up():
    assert walk.protect_first(["c", "a", "d", "b"], ["b", "x", "a"], 2) == ["b", "c", "a", "d"]
    assert walk.protect_first(["c", "a"], ["a", "c"], 0) == ["c", "a"]
    assert walk.protect_first(["c", "a"], ["a", "a", "c"], 2) == ["a", "c"]


def test_fuse_mode_searches_the_ranking_to_protect_itself(corpus):
    """Dense first hits seed the walk, graph search runs the hybrid search it protects; a question
    with no seed gets that hybrid ranking back, not the dense one."""
    hybrid = corpus.search(ONE_HOP, k=6, mode="hybrid")
    dense = corpus.search(ONE_HOP, k=6, mode="dense")
    knobs = {"extractor": None, "fact_k": 3, "keep_first": 1}
    own = graph_search(corpus, ONE_HOP, k=6, dense_hits=dense, fuse_mode="hybrid", **knobs)
    given = graph_search(corpus, ONE_HOP, k=6, dense_hits=dense, fuse_hits=hybrid, **knobs)
    assert ids(own.hits) == ids(given.hits) and ids(own.hits)[0] == ids(hybrid)[0]
    unseeded = graph_search(corpus, ONE_HOP, k=6, extractor=None, keep_first=1, fuse_mode="hybrid")
    assert not unseeded.seeds and ids(unseeded.hits) == ids(hybrid)


def test_keep_in_top_never_pushes_hybrids_first_hits_out():
    assert walk.keep_within(["a", "b", "c", "d", "e"], ["e", "a"], 2, 3) == ["a", "b", "e", "c", "d"]
    assert walk.keep_within(["a", "b", "c"], ["b", "a"], 2, 2) == ["a", "b", "c"]  # already inside
    assert walk.keep_within(["a", "b", "c", "d"], ["d", "c", "b"], 3, 2) == ["d", "c", "a", "b"]


def test_keep_in_top_on_the_built_corpus(corpus):
    hybrid = corpus.search(ONE_HOP, k=6, mode="hybrid")
    knobs = {"extractor": None, "fact_k": 3, "fuse_hits": hybrid, "keep_first": 1}
    found = graph_search(corpus, ONE_HOP, k=3, dense_hits=hybrid, keep_in_top=3, **knobs)
    assert ids(found.hits)[0] == "d2" and set(ids(hybrid)[:3]) == set(ids(found.hits))


def test_relative_fact_scores_seed_only_the_closer_facts():
    facts = [
        Fact("a", "p", "", 0.8, ["x"]),
        Fact("b", "p", "", 0.6, ["y"]),
        Fact("c", "p", "", 0.7, ["z", "x"]),
    ]
    assert fact_seed_weights(facts) == {"x": 0.8, "y": 0.6, "z": 0.7}  # raw cosines
    relative = fact_seed_weights(facts, relative=True)
    assert relative == {"x": pytest.approx(1.0), "z": pytest.approx(0.5)}  # the least close seeds nothing
    assert fact_seed_weights(facts[:1], relative=True) == {"x": 1.0}  # one fact: it counts fully


def test_fact_relative_and_hub_entities_in_graph_search(corpus):
    hybrid = corpus.search(TWO_HOP, k=6, mode="hybrid")
    knobs = {"extractor": None, "fact_k": 3, "dense_hits": hybrid}
    raw = graph_search(corpus, TWO_HOP, k=6, **knobs)
    relative = graph_search(corpus, TWO_HOP, k=6, fact_relative=True, **knobs)
    raw_seeds = {name for name, _ in raw.seeds}
    assert "Korvik" in raw_seeds and "Korvik" in {name for name, _ in relative.seeds}  # the closest fact's
    assert {name for name, _ in relative.seeds} <= raw_seeds
    # Korvik is in three chunks (p1, p2, d4): with hub_chunks=2 a hub, never seeded through a fact
    hub = graph_search(corpus, TWO_HOP, k=6, hub_chunks=2, **knobs)
    assert "Korvik" not in {name for name, _ in hub.seeds}


def test_fact_below_skips_facts_for_a_question_that_names_its_entities(corpus):
    hybrid = corpus.search(TWO_HOP, k=6, mode="hybrid")
    knobs = {"extractor": None, "fact_k": 3, "dense_hits": hybrid}
    # the question names Ilsa Brandt (one seed by n-gram): facts only below one named seed: none
    skipped = graph_search(corpus, TWO_HOP, k=6, fact_below=1, **knobs)
    assert skipped.facts == 0 and "Korvik" not in {name for name, _ in skipped.seeds}
    kept = graph_search(corpus, TWO_HOP, k=6, fact_below=2, **knobs)
    assert kept.facts == 3 and "Korvik" in {name for name, _ in kept.seeds}


def test_a_seed_only_a_fact_reached_brings_its_chunks_through_the_second_hop(corpus):
    from rag_graphs.entity_graph.linking import ENTITY_FIELDS
    from rag_graphs.entity_graph.neighbourhood import FACT_SEED, fetch_neighbourhood
    from rag_graphs.entity_graph.rows import entity_rows

    row = entity_rows(corpus, ["korvik"], ENTITY_FIELDS)["korvik"]
    shape = {"expr": None, "size": 10, "hub_chunks": 100}
    named = fetch_neighbourhood(corpus, {"korvik": row}, [], expand=False, **shape).edges
    assert set(named) == {"p1", "p2", "d4"}  # a named seed's chunks are read first
    fact = {"korvik": {**row, FACT_SEED: True}}
    assert fetch_neighbourhood(corpus, fact, [], expand=False, **shape).edges == {}
    hit = corpus.search(TWO_HOP, k=1, mode="dense")  # p1, which holds Korvik
    reached = fetch_neighbourhood(corpus, fact, hit, expand=True, **shape).edges
    assert {"p1", "p2", "d4"} <= set(reached)  # through the second hop


def test_a_title_edge_sends_the_walk_to_the_page_about_the_entity():
    """From an entity the walk goes on mostly to the passage its title names (a bridge
    entity's own page), not evenly to every passage that mentions it."""
    edges = {"page": ["x"], "mention": ["x"], "other": ["x"]}
    for weight, expected in ((1.0, "even"), (5.0, "page")):
        graph = build_walk_graph(edges, set(), titled={"page": {"x"}}, title_weight=weight)
        reset = np.zeros(graph.size)
        reset[graph.entity_node("x")] = 1.0
        rank = pagerank(graph.adjacency, reset, damping=0.6)
        if expected == "even":
            assert rank[0] == pytest.approx(rank[1]) == pytest.approx(rank[2])
        else:
            assert rank[0] > 2 * rank[1] and rank[1] == pytest.approx(rank[2])
    assert (graph.adjacency != graph.adjacency.T).nnz == 0  # still undirected


def test_the_neighbourhood_knows_which_entities_each_passage_is_about(corpus):
    from rag_graphs.entity_graph.linking import ENTITY_FIELDS
    from rag_graphs.entity_graph.neighbourhood import fetch_neighbourhood
    from rag_graphs.entity_graph.rows import entity_rows

    row = entity_rows(corpus, ["korvik"], ENTITY_FIELDS)["korvik"]
    hit = corpus.search(TWO_HOP, k=1, mode="dense")
    found = fetch_neighbourhood(corpus, {"korvik": row}, hit, expr=None, size=10, expand=True, hub_chunks=100)
    assert found.titled["p2"] == {"korvik"} and found.titled["p1"] == {"ilsa brandt"}
    assert found.titled["d2"] == {"velm"}  # reached in the second hop, through the entity it is about
    assert "d3" in found.edges and "d3" not in found.titled  # reached through Velm; it is about Hessa
    assert all(keys <= set(found.edges[cid]) for cid, keys in found.titled.items())


def test_title_edges_rank_the_bridge_entitys_page_above_a_passage_that_only_mentions_it(corpus):
    hybrid = corpus.search(TWO_HOP, k=6, mode="hybrid")
    knobs = {"extractor": None, "dense_hits": hybrid, "k": 6}
    plain = ids(graph_search(corpus, TWO_HOP, title_weight=1.0, **knobs).hits)
    titled = ids(graph_search(corpus, TWO_HOP, title_weight=5.0, **knobs).hits)
    assert plain.index("d4") < plain.index("p2")  # every edge alike: Tarn Guild mentions Korvik too
    assert titled.index("p2") < titled.index("d4")  # the page about Korvik, where hop two is
