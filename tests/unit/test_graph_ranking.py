"""The walk's restart weights and title edges, and the ranking that keeps hybrid's top (never lose)."""

from __future__ import annotations

import hashlib
import math
import re

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from rag_graphs.config.graph_search import GraphSearchOptions
from rag_graphs.entity_graph import rank
from rag_graphs.entity_graph.build import add_entities
from rag_graphs.entity_graph.entities import annotate
from rag_graphs.entity_graph.graph_search import graph_search
from rag_graphs.entity_graph.walk import build_walk_graph, pagerank, restart_shares
from rag_graphs.store import ChunkIndex
from tests.graph_seams import WALK_ONLY, script_first_hits, use_extractor

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
def corpus(store_uri: str, monkeypatch) -> ChunkIndex:
    """The tiny corpus with its entity graph; questions have no mentions (their name n-grams
    still link)."""
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
    use_extractor(monkeypatch, None)
    return index


def ids(hits) -> list[str]:
    return [str(d.id) for d, _ in hits]


def test_the_walk_ranks_the_chains_second_passage_above_a_distractor(corpus, monkeypatch):
    hybrid = corpus.search(TWO_HOP, k=6, mode="hybrid")
    assert ids(hybrid).index("d2") < ids(hybrid).index("p2")  # "a town with a river" wins lexically
    script_first_hits(monkeypatch, hybrid)
    ranked = ids(graph_search(corpus, TWO_HOP, k=6, options=WALK_ONLY).hits)
    assert ranked[0] == "p1" and ranked.index("p2") < ranked.index("d2")


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


def test_keep_first_protects_hybrids_top_hit_and_the_walk_still_finds_the_second_hop(corpus, monkeypatch):
    """The issue's tiny corpus, one setting for both questions: the two-hop chain's second passage
    above the distractor, and the one-hop question's best hybrid hit first."""
    options = GraphSearchOptions(keep_first=1, keep_in_top=0, title_weight=1.0, learned_rank=False)
    hybrid = corpus.search(TWO_HOP, k=6, mode="hybrid")
    script_first_hits(monkeypatch, hybrid)
    ranked = ids(graph_search(corpus, TWO_HOP, k=6, options=options).hits)
    assert ranked[0] == ids(hybrid)[0] == "p1" and ranked.index("p2") < ranked.index("d2")
    assert ids(hybrid).index("d2") < ids(hybrid).index("p2")
    two_first = GraphSearchOptions(keep_first=2, keep_in_top=0, learned_rank=False)
    two = graph_search(corpus, TWO_HOP, k=6, options=two_first)
    assert ids(two.hits)[:2] == ids(hybrid)[:2]
    scores = [s for _, s in two.hits]
    assert scores == sorted(scores, reverse=True)


def test_protect_first_moves_the_first_rankings_top_up():
    assert rank.protect_first(["c", "a", "d", "b"], ["b", "x", "a"], 2) == ["b", "c", "a", "d"]
    assert rank.protect_first(["c", "a"], ["a", "c"], 0) == ["c", "a"]
    assert rank.protect_first(["c", "a"], ["a", "a", "c"], 2) == ["a", "c"]


def test_protecting_hybrids_top_searches_the_hybrid_ranking_itself(corpus, monkeypatch):
    """Dense first hits seed the walk and graph search runs the hybrid search it protects (one
    dense and one BM25 search); a question with no seed gets that hybrid ranking back. Without
    protection only the dense search runs."""
    from rag_graphs.entity_graph import first_search

    asked: list[bool] = []
    real = first_search.search_first_hits

    def spy(*args, **kwargs):
        asked.append(kwargs["hybrid"])
        return real(*args, **kwargs)

    monkeypatch.setattr(first_search, "search_first_hits", spy)
    unseeded = graph_search(corpus, ONE_HOP, k=6, options=GraphSearchOptions(keep_first=1, keep_in_top=0))
    assert not unseeded.seeds and ids(unseeded.hits) == ids(corpus.search(ONE_HOP, k=6, mode="hybrid"))
    graph_search(corpus, TWO_HOP, k=6, options=WALK_ONLY)
    assert asked == [True, False]


def test_keep_in_top_never_pushes_hybrids_first_hits_out():
    assert rank.keep_within(["a", "b", "c", "d", "e"], ["e", "a"], 2, 3) == ["a", "b", "e", "c", "d"]
    assert rank.keep_within(["a", "b", "c"], ["b", "a"], 2, 2) == ["a", "b", "c"]  # already inside
    assert rank.keep_within(["a", "b", "c", "d"], ["d", "c", "b"], 3, 2) == ["d", "c", "a", "b"]


def test_keep_in_top_on_the_built_corpus_leaves_the_walk_a_place(corpus, monkeypatch):
    """Hybrid's first two stay inside the top 3 where the walk alone ranks one of them 4th; asked
    to keep hybrid's first 3 in a top 3, graph search keeps 2 (``k - 1``): the walk's best other
    find keeps its place."""
    hybrid = corpus.search(TWO_HOP, k=6, mode="hybrid")
    script_first_hits(monkeypatch, hybrid)
    walk_only = ids(graph_search(corpus, TWO_HOP, k=6, options=WALK_ONLY).hits)
    assert walk_only.index(ids(hybrid)[1]) >= 3
    keep = {"keep_first": 1, "title_weight": 1.0, "learned_rank": False}
    two = ids(graph_search(corpus, TWO_HOP, k=3, options=GraphSearchOptions(keep_in_top=2, **keep)).hits)
    assert two[0] == ids(hybrid)[0] and set(ids(hybrid)[:2]) <= set(two)
    assert two[1] == walk_only[1] and walk_only[1] not in ids(hybrid)[:3]
    three = ids(graph_search(corpus, TWO_HOP, k=3, options=GraphSearchOptions(keep_in_top=3, **keep)).hits)
    assert three == two


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
    found = fetch_neighbourhood(corpus, {"korvik": row}, hit, expr=None, size=10)
    assert found.titled["p2"] == {"korvik"} and found.titled["p1"] == {"ilsa brandt"}
    assert found.titled["d2"] == {"velm"}  # reached in the second hop, through the entity it is about
    assert "d3" in found.edges and "d3" not in found.titled  # reached through Velm; it is about Hessa
    assert all(keys <= set(found.edges[cid]) for cid, keys in found.titled.items())


def test_title_edges_rank_the_bridge_entitys_page_above_a_passage_that_only_mentions_it(corpus, monkeypatch):
    script_first_hits(monkeypatch, corpus.search(TWO_HOP, k=6, mode="hybrid"))
    plain = ids(graph_search(corpus, TWO_HOP, k=6, options=WALK_ONLY).hits)
    titled_edges = GraphSearchOptions(keep_first=0, keep_in_top=0)  # title_weight: the default, 5
    titled = ids(graph_search(corpus, TWO_HOP, k=6, options=titled_edges).hits)
    assert plain.index("d4") < plain.index("p2")  # every edge alike: Tarn Guild mentions Korvik too
    assert titled.index("p2") < titled.index("d4")  # the page about Korvik, where hop two is


def test_the_learned_ranker_orders_graph_searchs_candidates(corpus, monkeypatch):
    """With ``learned_rank`` (the default) the ranker's scores decide the final order, over the
    walk's candidates and the first hits; here a scripted ranker that puts the longest passage
    first, so the order is the passages' word counts, whatever the walk said."""
    from rag_graphs.entity_graph import graph_search as searching
    from rag_graphs.entity_graph.candidates import FEATURES

    class Longest:
        def score(self, x):
            return np.asarray(x)[:, FEATURES.index("length_log")]

    monkeypatch.setattr(searching, "shipped_ranker", lambda: Longest())
    hits = graph_search(corpus, TWO_HOP, k=6, options=GraphSearchOptions()).hits
    words = [len(d.page_content.split()) for d, _ in hits]
    assert words == sorted(words, reverse=True) and len(hits) == 6
    walk = ids(graph_search(corpus, TWO_HOP, k=6, options=GraphSearchOptions(learned_rank=False)).hits)
    assert ids(hits) != walk  # the ranker, not the walk, ordered them
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True) and scores[0] == 1.0


class ScriptedRows:
    """The neighbourhood's reads (``rows.GraphRows``) from dicts: chunk rows and entity rows by key."""

    def __init__(self, chunks: dict[str, dict], entities: dict[str, dict]) -> None:
        self._chunks, self._entities = chunks, entities

    def chunks(self, ids, fields, expr):
        return {cid: self._chunks[cid] for cid in ids if cid in self._chunks}

    def entities(self, keys, fields):
        return {key: self._entities[key] for key in keys if key in self._entities}


def test_the_second_hop_starts_from_the_question_entities_own_pages():
    """Dense's first hit ``d`` is no question entity's page and mentions ``tarn guild`` (in 3 other
    passages); hybrid's first hit ``s``, the page of the question's ``korvik`` (its title), names
    its mayor ``osric vale``, whose own page ``o`` is hop two. With room for two more passages the
    second hop takes ``o`` first: a seed's own page leads, whatever its first-hit rank (2Wiki's
    bridge comparisons lost their directors' pages to the first hits' other entities)."""
    from rag_graphs.entity_graph.neighbourhood import fetch_neighbourhood

    hit = lambda cid, ents, title: (  # noqa: E731
        Document(page_content=cid, id=cid, metadata={"entities": ents, "title": title}),
        1.0,
    )
    first = [hit("d", ["tarn guild"], "Tarn Guild trade"), hit("s", ["korvik", "osric vale"], "Korvik")]
    rows = ScriptedRows(
        {cid: {"id": cid, "title": cid} for cid in ("t1", "t2", "t3", "o")},
        {
            "tarn guild": {"chunks": ["d", "t1", "t2", "t3"], "n": 4},
            "osric vale": {"chunks": ["s", "o"], "n": 2},
        },
    )
    seeds = {"korvik": {"chunks": ["s"], "n": 1, "similarity": 1.0}}
    found = fetch_neighbourhood(None, seeds, first, expr=None, size=4, rows=rows)
    assert list(found.edges) == ["d", "s", "o", "t1"]
    assert found.edges["o"] == ["osric vale"]
    wide = fetch_neighbourhood(None, seeds, first, expr=None, size=10, rows=rows)
    assert set(wide.edges) == {"d", "s", "o", "t1", "t2", "t3"}  # with room, every one as before
