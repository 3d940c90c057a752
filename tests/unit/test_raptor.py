"""RAPTOR: tree shape, leaf tracing, resumable builds, collapsed and traversal queries."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from rag_graphs.ingestion.raptor import build_tree, cluster, leaves_of, pack, tree_collection
from rag_graphs.methods import get_graph
from rag_graphs.nodes.failures import RunFailed
from rag_graphs.store import open_index
from tests.conftest import recording_chat

QUESTION = "Where was Ilsa Brandt born?"


def _summariser() -> GenericFakeChatModel:
    """Summaries with the token counts a real model's replies carry."""
    usage = {"input_tokens": 100, "output_tokens": 5, "total_tokens": 105}
    reply = lambda i: AIMessage(content=f"summary number {i}", usage_metadata=usage)  # noqa: E731
    return GenericFakeChatModel(messages=map(reply, itertools.count()))


@pytest.fixture
def tree(loaded):
    report = build_tree(loaded, _summariser(), progress=False)
    return loaded, report, open_index(loaded.uri, tree_collection(loaded.collection), loaded.embeddings)


def test_cluster_groups_separated_points_and_covers_every_row():
    rng = np.random.default_rng(0)
    blobs = np.vstack([rng.normal(0, 0.01, (6, 8)), rng.normal(5, 0.01, (6, 8))])
    groups = cluster(blobs)
    assert sorted(sorted(g) for g in groups) == [list(range(6)), list(range(6, 12))]
    assert cluster(blobs[:2]) == [[0, 1]]


def test_clusters_over_the_summary_budget_are_clustered_again():
    """Two tight blobs of 6 rows, 1,000 characters each: BIC finds the blobs (6,000 characters
    each); with a 2,500-character budget each blob is split again, into groups of at most 2."""
    rng = np.random.default_rng(0)
    blobs = np.vstack([rng.normal(0, 0.01, (6, 8)), rng.normal(5, 0.01, (6, 8))])
    sizes = [1000] * 12
    groups = cluster(blobs, sizes=sizes, max_chars=2500)
    assert sorted(i for g in groups for i in g) == list(range(12))  # every row once
    assert all(sum(sizes[i] for i in g) <= 2500 for g in groups)
    assert all(max(g) < 6 or min(g) >= 6 for g in groups)  # no group mixes the blobs
    assert sorted(sorted(g) for g in cluster(blobs, sizes=sizes, max_chars=6000)) == [
        list(range(6)),
        list(range(6, 12)),
    ]


def test_rows_that_cannot_be_told_apart_are_split_by_the_budget():
    same = np.ones((5, 4))
    groups = cluster(same, sizes=[400, 400, 400, 400, 5000], max_chars=1000)
    assert sorted(i for g in groups for i in g) == list(range(5))
    assert all(len(g) == 1 or sum([400, 400, 400, 400, 5000][i] for i in g) <= 1000 for g in groups)
    assert [4] in groups  # a row over the budget on its own stays whole


def test_every_summary_reads_all_of_its_children(loaded):
    """With a budget a fourth of the demo corpus, the tree splits it, and no summary's children
    hold more text than the budget (unless a summary has a single child)."""
    model = recording_chat(*(f"summary {i}" for i in range(200)))
    report = build_tree(loaded, model, cluster_chars=400, progress=False)
    tree = open_index(loaded.uri, tree_collection(loaded.collection), loaded.embeddings)
    nodes = [d for d, _ in tree.iter_chunks() if d.metadata["level"] >= 1]
    prompts = ["\n".join(str(m.content) for m in messages) for messages in model.seen]
    total = sum(len(d.page_content) for d, _ in loaded.iter_chunks())
    assert total > 3 * 400 and report.nodes_per_level[1] >= total // 400  # the budget split it
    for node in nodes:
        children = tree.get(node.metadata["children"])
        assert len(children) == 1 or sum(len(c.page_content) for c in children) <= 400
        # one summariser prompt held every child whole
        assert any(all(c.page_content in p for c in children) for p in prompts), node.id


def test_tree_levels_link_every_summary_to_the_level_below(tree):
    source, report, index = tree
    nodes = index.iter_chunks()
    assert report.leaves == source.count() == report.nodes_per_level[0]
    assert len(report.nodes_per_level) >= 2 and report.nodes_per_level[-1] < report.leaves
    by_id = {d.id: d for d, _ in nodes}
    for doc in by_id.values():
        for child in doc.metadata["children"]:
            assert by_id[child].metadata["level"] == doc.metadata["level"] - 1
    assert report.summaries_written == sum(report.nodes_per_level[1:])
    assert index.count() == sum(report.nodes_per_level)
    # each summary is one model call, counted with its tokens as a run counts its calls
    assert report.llm_calls == report.summaries_written and report.input_tokens == 100 * report.llm_calls
    assert f"{report.llm_calls} LLM calls" in report.summary()


def test_every_leaf_is_reachable_from_the_top_level(tree):
    source, report, index = tree
    top = max(d.metadata["level"] for d, _ in index.iter_chunks())
    tops = [d for d, _ in index.iter_chunks() if d.metadata["level"] == top]
    reached = {leaf.id for node in tops for leaf in leaves_of(index, node.id)}
    assert reached == {d.id for d, _ in source.iter_chunks()}


def test_the_tree_always_ends_in_one_root(loaded):
    # One clustered level leaves several nodes; levels past max_levels pack them until one is left.
    report = build_tree(loaded, _summariser(), max_levels=1, progress=False)
    assert report.nodes_per_level[1] > 1 and report.nodes_per_level[-1] == 1
    index = open_index(loaded.uri, tree_collection(loaded.collection), loaded.embeddings)
    top = len(report.nodes_per_level) - 1
    (root,) = [d for d, _ in index.iter_chunks() if d.metadata["level"] == top]
    assert {leaf.id for leaf in leaves_of(index, root.id)} == {d.id for d, _ in loaded.iter_chunks()}


@pytest.mark.parametrize(
    "sizes,groups",
    [([1, 1, 1, 1, 1], [[0, 1, 2, 3, 4]]), ([5, 5, 5, 5, 5], [[0, 1], [2, 3, 4]]), ([9, 9], [[0, 1]])],
)
def test_pack_merges_at_least_two_rows_within_the_budget(sizes, groups):
    assert pack(sizes, max_chars=10) == groups


def test_auto_sends_global_questions_to_raptor_when_a_tree_exists(tree, make_context):
    ctx = make_context('{"kind": "global_summary"}', "Korvik [1].", k=2, router="llm")
    out = get_graph("auto").invoke({"question": QUESTION}, context=ctx)
    expected = "global_summary -> raptor (no community reports for 'test', so not graphrag)"
    assert out["steps"][0]["text"] == expected
    assert [s["node"] for s in out["steps"][1:]] == ["retrieve_tree", "generate"]


def test_rebuilding_resumes_without_new_summaries(tree):
    source, report, index = tree
    again = build_tree(
        source, GenericFakeChatModel(messages=iter([])), progress=False
    )  # would fail if called
    assert again.summaries_written == 0 and again.nodes_per_level == report.nodes_per_level


def test_collapsed_and_traversal_queries_answer_from_the_tree(tree, make_context):
    source, report, index = tree
    out = get_graph("raptor").invoke({"question": QUESTION}, context=make_context("Korvik [1].", k=3))
    assert [s["node"] for s in out["steps"]] == ["retrieve_tree", "generate"]
    assert len(out["documents"]) == 3 and {d.id for d in out["documents"]} <= {
        d.id for d, _ in index.iter_chunks()
    }
    out = get_graph("raptor").invoke(
        {"question": QUESTION}, context=make_context("Korvik [1].", k=2, raptor_mode="traversal")
    )
    levels = [d.metadata["level"] for d in out["documents"]]
    assert levels[0] == len(report.nodes_per_level) - 1 and levels[-1] == 0
    assert levels == sorted(levels, reverse=True)  # top-down


def test_raptor_without_a_tree_says_how_to_build_one(loaded, make_context):
    with pytest.raises(RunFailed, match="run `rag-graphs raptor build` first"):
        get_graph("raptor").invoke({"question": QUESTION}, context=make_context("x"))


def test_building_an_empty_collection_is_a_clear_error(index):
    with pytest.raises(ValueError, match="is empty: ingest documents first"):
        build_tree(index, _summariser(), progress=False)


@pytest.mark.parametrize("deny", ['kind != "table"', 'not (source like "%provinces%")'])
@pytest.mark.parametrize("mode", ["collapsed", "traversal"])
def test_a_deny_filter_hides_every_summary_written_from_a_denied_chunk(tree, make_context, deny, mode):
    """A summary has its own kind and no source: a deny filter on its chunks' fields used to keep
    the salary table out of naive search while RAPTOR served the summary written from it (attack
    round 3). A summary is shown only when the filter admits every chunk under it."""
    source, _, index = tree
    denied = {str(d.id) for d in source.where(deny.replace("!=", "==").replace("not ", ""), limit=100)}
    assert denied  # the demo corpus has the chunks this filter denies

    def over_denied(docs):
        return [
            d.id
            for d in docs
            if d.metadata.get("level", 0) and {str(leaf.id) for leaf in leaves_of(index, str(d.id))} & denied
        ]

    every = dict(k=50, raptor_mode=mode)
    open_run = get_graph("raptor").invoke(
        {"question": QUESTION}, context=make_context("Korvik [1].", **every)
    )
    assert over_denied(open_run["documents"])  # unfiltered, summaries over the denied chunks show
    out = get_graph("raptor").invoke(
        {"question": QUESTION}, context=make_context("Korvik [1].", search_filter=deny, **every)
    )
    assert out["documents"] and not over_denied(out["documents"])
    assert not {str(d.id) for d in out["documents"]} & denied
