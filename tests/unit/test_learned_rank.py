"""The learned ranker over graph search's candidates: loaded from its shipped file, never fitted;
it orders scripted feature rows as its weights say; a bad file is a clear error naming it; the
features read what graph search holds."""

from __future__ import annotations

import json

import numpy as np
import pytest
from langchain_core.documents import Document

from rag_graphs.config.errors import SetupError
from rag_graphs.entity_graph.candidates import (
    FEATURES,
    bridge_hop,
    bridge_keys,
    candidate_features,
    cosines_of,
    pool_of,
)
from rag_graphs.entity_graph.learned_rank import RANKER_PATH, load_ranker, shipped_ranker
from rag_graphs.entity_graph.neighbourhood import Neighbourhood
from rag_graphs.store.fields import DENSE_FIELD, TEXT_FIELD

COS, TITLE = FEATURES.index("dense_cosine"), FEATURES.index("title_bridge")


def ranker_file(tmp_path, **change) -> str:
    """Two scripted trees: the first splits on the cosine (<= 0.5: 0, else 1), the second on
    a title naming a bridge entity (<= 0.5: 0, else 2)."""
    data = {
        "features": list(FEATURES),
        "roots": [0, 3],
        "nodes": {
            "feature": [COS, -1, -1, TITLE, -1, -1],
            "threshold": [0.5, 0, 0, 0.5, 0, 0],
            "left": [1, -1, -1, 4, -1, -1],
            "right": [2, -1, -1, 5, -1, -1],
            "value": [0, 0.0, 1.0, 0, 0.0, 2.0],
        },
        **change,
    }
    path = tmp_path / "ranker.json"
    path.write_text(json.dumps(data))
    return path


def test_the_shipped_ranker_loads_from_its_file_with_its_trees():
    ranker = shipped_ranker()
    assert RANKER_PATH.name == "graph_ranker.json" and RANKER_PATH.parent.name == "data"
    shipped = json.loads(RANKER_PATH.read_text())
    assert ranker.features == FEATURES and len(ranker.roots) == len(shipped["roots"]) > 10
    used = {FEATURES[f] for f in ranker.feature if f >= 0}
    assert {"dense_cosine", "graph_rrf", "hybrid_rrf"} <= used  # it reads more than the walk


def test_the_ranker_orders_scripted_rows_as_its_trees_say(tmp_path):
    ranker = load_ranker(ranker_file(tmp_path))
    rows = np.zeros((4, len(FEATURES)))
    rows[0, COS] = 0.9  # 1
    rows[1, COS], rows[1, TITLE] = 0.2, 1.0  # 0 + 2
    rows[2, COS], rows[2, TITLE] = 0.7, 1.0  # 1 + 2
    rows[3, COS] = 0.5  # at the threshold: left, 0
    assert list(ranker.score(rows)) == [1.0, 2.0, 3.0, 0.0]
    assert list(ranker.order(rows)) == [2, 1, 0, 3]


def test_the_shipped_ranker_prefers_a_passage_the_question_describes():
    """Its learned trees, not a scripted file: of two rows alike but for the cosine to the
    question, the closer passage scores at least as high, and some cosine step lifts it."""
    ranker = shipped_ranker()
    rows = np.zeros((2, len(FEATURES)))
    rows[:, FEATURES.index("graph_rrf")] = 1 / 65
    rows[:, FEATURES.index("hybrid_rrf")] = 1 / 65
    rows[0, COS], rows[1, COS] = 0.8, 0.1
    scores = ranker.score(rows)
    assert scores[0] > scores[1]


def test_a_missing_ranker_file_names_it(tmp_path):
    with pytest.raises(SetupError, match=r"nowhere\.json does not exist"):
        load_ranker(tmp_path / "nowhere.json")


def test_a_corrupt_ranker_file_names_it(tmp_path):
    path = tmp_path / "ranker.json"
    path.write_text("{not json")
    with pytest.raises(SetupError, match=r"ranker\.json is not readable JSON"):
        load_ranker(path)
    path.write_text(json.dumps({"features": list(FEATURES), "roots": [0]}))
    with pytest.raises(SetupError, match=r"ranker\.json lacks a field"):
        load_ranker(path)


def test_a_ranker_file_for_other_features_or_malformed_trees_is_refused(tmp_path):
    with pytest.raises(SetupError, match="ranker.json was written for the features"):
        load_ranker(ranker_file(tmp_path, features=["ppr_log"]))
    good = json.loads(ranker_file(tmp_path).read_text())["nodes"]
    for broken in (
        {**good, "left": [0, -1, -1, 4, -1, -1]},  # a split pointing at itself: a walk without end
        {**good, "value": [0, 0.0, 1.0, 0, 0.0]},  # one value short
        {**good, "feature": [len(FEATURES), -1, -1, TITLE, -1, -1]},  # no such feature
        {**good, "threshold": [float("nan"), 0, 0, 0.5, 0, 0]},
    ):
        with pytest.raises(SetupError, match="ranker.json: its trees are malformed"):
            load_ranker(ranker_file(tmp_path, nodes=broken))
    with pytest.raises(SetupError, match="trees are malformed"):
        load_ranker(ranker_file(tmp_path, roots=[9]))


def test_the_pool_is_todays_top_then_the_first_hits():
    order = [f"w{i}" for i in range(40)]
    pool = pool_of(order, ["d1", "w0"], ["h1", "d1"])
    assert pool == [*order[:30], "d1", "h1"]
    assert pool_of(order, [], [], k=35) == order[:35]  # a search asking for more than 30 gets them


def test_features_read_the_walk_the_first_searches_and_the_neighbourhood():
    doc = lambda cid: Document(page_content=cid, id=cid)  # noqa: E731
    chunks = ["a", "b", "c"]
    probabilities = np.array([0.2, 0.5, 0.1])
    hood = Neighbourhood(
        edges={"a": ["ilsa", "korvik"], "b": ["korvik", "osric"], "c": ["osric", "hub"]},
        hubs={"hub"},
        titled={"b": {"korvik"}, "c": {"osric"}},
    )
    seeds = {"korvik": {"similarity": 1.0, "n": 2}, "ilsa": {"similarity": 0.8, "n": 4}}
    x = candidate_features(
        ["b", "a", "c"],
        order=["b", "a", "c"],
        chunks=chunks,
        probabilities=probabilities,
        dense=[(doc("a"), 0.9)],
        hybrid=[(doc("a"), 1 / 61 + 1 / 62), (doc("b"), 1 / 61)],
        seeds=seeds,
        hood=hood,
        cosines={"a": 0.9, "b": 0.4},
        texts={"a": ("Ilsa Brandt", "Ilsa Brandt was born in Korvik."), "b": ("Korvik", "A harbour town.")},
        question="Who holds office in the town where Ilsa Brandt was born?",
    )
    col = {name: x[:, i] for i, name in enumerate(FEATURES)}
    assert list(col["graph_top1"]) == [1, 0, 0] and list(col["graph_top2"]) == [1, 1, 0]
    assert list(col["ppr_minmax"]) == pytest.approx([1.0, 0.25, 0.0])
    assert list(col["ppr_rrf"]) == pytest.approx([1 / 61, 1 / 62, 1 / 63])
    assert list(col["dense_cosine"]) == [0.4, 0.9, 0.0]
    assert list(col["dense_rrf"]) == pytest.approx([0, 1 / 61, 0])
    assert list(col["bm25_rrf"]) == pytest.approx([1 / 61, 1 / 62, 0])  # a: fused - dense share
    assert list(col["hybrid_top1"]) == [0, 1, 0]
    assert list(col["hop"]) == [0, 0, 2]  # b and a are first hits; c only reached
    assert list(col["seeds_in"]) == [1, 2, 0]
    assert list(col["seed_weight"]) == pytest.approx([0.5, 0.5 + 0.2, 0])
    assert list(col["title_seed"]) == [1, 0, 0] and list(col["title_bridge"]) == [0, 0, 1]
    assert list(col["degree_log"]) == pytest.approx(np.log1p([2, 2, 1]))
    # b's title names korvik, which a (hybrid's first) holds; c's names osric, which b (today's
    # first) holds: the bridge from the first hop; a's title names nothing
    assert list(col["title_in_top"]) == [1, 0, 1]
    assert list(col["shared_top_log"]) == pytest.approx(np.log1p([1, 1, 1]))
    assert list(col["title_words"]) == [0.0, 1.0, 0.0]  # c's text was not read: empty
    # question content words: holds office town ilsa brandt born (6); a has ilsa brandt born
    assert list(col["text_words"]) == pytest.approx([1 / 6, 3 / 6, 0.0])
    assert list(col["length_log"]) == pytest.approx(np.log1p([3, 6, 0]))


def test_cosines_of_stored_vectors():
    got = cosines_of({"a": [1.0, 0.0], "b": [1.0, 1.0]}, [2.0, 0.0])
    assert got["a"] == pytest.approx(1.0) and got["b"] == pytest.approx(2**-0.5)
    assert cosines_of({}, [1.0]) == {}


def bridge_hood() -> Neighbourhood:
    """Today's first passage ``w0`` holds the seed ``korvik`` and ``osric`` (the bridge: the question
    does not name him) and the hub ``coast``; past the pool's depth ``w33`` holds osric, ``w31`` only
    the seed, ``w32`` only the hub, ``w34`` osric too."""
    edges = {f"w{i}": [] for i in range(40)}
    edges |= {
        "w0": ["korvik", "osric", "coast"],
        "w31": ["korvik"],
        "w32": ["coast"],
        "w33": ["osric", "lunmar"],
        "w34": ["osric"],
    }
    return Neighbourhood(edges=edges, hubs={"coast"}, titled={"w33": {"osric"}})


def test_the_bridge_is_the_first_hops_entities_the_question_does_not_name():
    hood = bridge_hood()
    seeds = {"korvik": {"similarity": 1.0, "n": 3}}
    keys = bridge_keys([f"w{i}" for i in range(40)], ["w31"], seeds, hood)
    assert keys["w0"] == {"osric"}  # not the seed, not the hub
    assert keys["w31"] == set()  # hybrid's first hits are first hop too
    assert set(keys) == {"w0", "w1", "w2", "w3", "w4", "w31"}


def test_the_bridge_hop_adds_walked_passages_past_the_pool_that_hold_the_bridge(monkeypatch):
    """The pool was today's first 30 and the first hits: w33 and w34 (holding osric) were walked
    but never ranked; the second hop brings them in, by the walk's order, at most ``BRIDGE``."""
    import rag_graphs.entity_graph.candidates as candidates

    order = [f"w{i}" for i in range(40)]
    seeds = {"korvik": {"similarity": 1.0, "n": 3}}
    pool = pool_of(order, [], [])
    assert bridge_hop(pool, order, [], seeds, bridge_hood()) == ["w33", "w34"]  # not w31, w32
    monkeypatch.setattr(candidates, "BRIDGE", 1)
    assert bridge_hop(pool, order, [], seeds, bridge_hood()) == ["w33"]
    assert bridge_hop(pool, order, [], {"korvik": {}, "osric": {}}, bridge_hood()) == []  # no bridge


class PoolStore:
    """The one read ``pool_features`` makes (``index.chunks.get``): each asked id's vector, title and text."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.chunks = self

    def get(self, ids, fields, where=None):
        self.asked += list(ids)
        return {cid: {DENSE_FIELD: [1.0, 0.0], TEXT_FIELD: f"{cid} text", "title": cid} for cid in ids}


def test_graph_searchs_pool_holds_the_bridge_passages_with_features_saying_so():
    """What the search ranks (``pool_features``): today's 30, the first hits, then the bridge's
    passages, each flagged as joined through the bridge, with the bridge entity's share of the
    question's words and its rarity among the walked passages (osric: w0, w33, w34)."""
    from rag_graphs.entity_graph.first_search import FirstHits
    from rag_graphs.entity_graph.learned_rank import RankInputs, pool_features
    from rag_graphs.entity_graph.walk import Walk

    order = [f"w{i}" for i in range(40)]
    hood = bridge_hood()
    walked = Walk(order, np.linspace(1.0, 0.1, 40), [("korvik", 1.0)], 4)
    first = FirstHits(
        [(Document(page_content="w0", id="w0"), 0.9)], [(Document(page_content="w0", id="w0"), 0.5)]
    )
    held = RankInputs(
        "Who did Osric Vale marry in Korvik?",
        [1.0, 0.0],
        first,
        {"korvik": {"similarity": 1.0, "n": 3}},
        hood,
        walked,
        ["w0"],
    )
    store = PoolStore()
    pool, x = pool_features(store, held, k=5, keep_first=1, keep_in_top=2, expr=None)
    assert pool == [*order[:30], "w33", "w34"] and store.asked == pool
    col = {name: x[:, i] for i, name in enumerate(FEATURES)}
    assert list(col["bridge_joined"][-3:]) == [0, 1, 1]  # w29 was in today's 30
    assert col["bridge_joined"][:30].sum() == 0
    assert list(col["bridge_log"][-2:]) == pytest.approx(np.log1p([1, 1]))
    assert col["bridge_log"][0] == 0  # w0's own entities are no bridge for itself
    assert list(col["bridge_specific"][-2:]) == pytest.approx([1 / 3, 1 / 3])
    assert list(col["bridge_words"][-2:]) == [1.0, 1.0]  # "osric" is a question word
