"""One search path: a plan per index (not per filter or k), and the cache around every searcher.

The default search (``search_mode=auto``: graph search on a collection with an entity graph) goes
through the same cache as dense and hybrid search, keyed by the searcher, the store's state read at
search time, the filter, ``k`` and the query: a repeated question is answered from the cache (its
retrieve step says so), and a delete, a relabel, a write by another process or another tenant's
filter each miss it. Per-question filters (RAPTOR's levels, the evaluator's oracle and distractor
settings) reuse one plan.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from rag_graphs.eval import EvalOptions
from rag_graphs.eval.rows import read_rows
from rag_graphs.eval.runner import evaluate
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.methods import get_graph
from rag_graphs.search import retrieval
from rag_graphs.search.cache import SEARCHES
from rag_graphs.search.retrieval import search_plan

QUESTION = "Where was Ilsa Brandt born?"


@pytest.fixture(autouse=True)
def fresh_cache():
    SEARCHES.clear()
    yield
    SEARCHES.clear()


def _constant(reply: str = "Korvik [1].") -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=itertools.cycle([AIMessage(content=reply)]))


def _ask(ctx) -> dict:
    return get_graph("naive").invoke({"question": QUESTION}, context=ctx)


def _said_cached(out: dict) -> bool:
    first = next(s for s in out["steps"] if s["node"] == "retrieve")
    return "search cache hit" in first.get("text", "")


@pytest.fixture
def counted_plans(monkeypatch) -> list:
    """Every plan built from here on (``search_plan`` keeps one per key)."""
    built: list = []
    real = retrieval.build_plan

    def counting(key, ctx):
        built.append(key)
        return real(key, ctx)

    monkeypatch.setattr(retrieval, "build_plan", counting)
    with retrieval._PLANS_LOCK:
        retrieval._PLANS.clear()
    return built


def test_a_repeated_default_ask_is_served_by_the_cache_and_says_so(loaded, make_context):
    ctx = make_context(chat_model=_constant(), k=3)
    assert search_plan(ctx).mode == "graph"  # the default search on a collection with a graph
    first, second = _ask(ctx), _ask(ctx)
    assert not _said_cached(first) and _said_cached(second)
    assert [d.id for d in second["documents"]] == [d.id for d in first["documents"]]
    assert SEARCHES.stats()["hits"] >= 1


def test_a_delete_between_two_asks_misses_the_cache(loaded, make_context):
    ctx = make_context(chat_model=_constant(), k=3)
    first = _ask(ctx)
    gone = first["documents"][0].metadata["source"]
    assert loaded.delete_source(gone) > 0
    again = _ask(ctx)
    assert not _said_cached(again)
    assert gone not in {d.metadata["source"] for d in again["documents"]}


def test_a_relabel_between_two_asks_misses_the_cache(loaded, make_context, demo_corpus: Path):
    ctx = make_context(chat_model=_constant(), k=3, tags=("public",))
    ingest([demo_corpus], index=loaded, options=IngestOptions(tags=["public"], progress=False, timeout=None))
    first = _ask(ctx)
    assert first["documents"] and _ask(ctx) and _said_cached(_ask(ctx))
    relabelled = first["documents"][0].metadata["source"]
    ingest([relabelled], index=loaded, options=IngestOptions(tags=["private"], progress=False, timeout=None))
    again = _ask(ctx)
    assert not _said_cached(again)
    assert relabelled not in {d.metadata["source"] for d in again["documents"]}


def test_another_tenant_never_gets_a_cached_ranking(loaded, make_context, demo_corpus: Path):
    ingest(
        [demo_corpus / "korvik.txt"],
        index=loaded,
        options=IngestOptions(tenant="acme", progress=False, timeout=None),
    )
    acme = make_context(chat_model=_constant(), k=3, tenant="acme")
    globex = make_context(chat_model=_constant(), k=3, tenant="globex")
    assert _ask(acme)["documents"]
    other = _ask(globex)
    assert not _said_cached(other) and other["documents"] == []


def test_a_write_by_another_process_misses_the_cache(loaded, make_context):
    """Another process's delete reaches this one only through the store: the rows go and the
    version marker every writer stores with the collection changes, while this process's own
    generation counter stays where it was. The cache reads the store's state at search time."""
    from rag_graphs.store.fields import VERSION_PROPERTY
    from rag_graphs.store.generations import generation

    ctx = make_context(chat_model=_constant(), k=3, search_mode="hybrid")
    first = _ask(ctx)
    assert _said_cached(_ask(ctx))
    gone = first["documents"][0].id
    before = generation(loaded.uri, loaded.collection)
    loaded.client.delete(loaded.collection, ids=[gone])  # as another process's ChunkIndex does
    loaded.client.alter_collection_properties(loaded.collection, properties={VERSION_PROPERTY: "other"})
    assert generation(loaded.uri, loaded.collection) == before
    again = _ask(ctx)
    assert not _said_cached(again) and gone not in {d.id for d in again["documents"]}


def test_raptor_traversal_builds_one_plan_for_all_its_levels(loaded, make_context, counted_plans):
    from rag_graphs.ingestion.raptor import build_tree

    build_tree(loaded, _constant("A summary of the passages."), progress=False)
    ctx = make_context(chat_model=_constant(), k=2, raptor_mode="traversal")
    out = get_graph("raptor").invoke({"question": QUESTION}, context=ctx)
    assert len({d.metadata["level"] for d in out["documents"]}) > 1  # it searched several levels
    tree_plans = [key for key in counted_plans if key.collection.endswith("_raptor")]
    assert len(tree_plans) == 1, counted_plans


def test_an_evaluator_run_with_per_question_filters_builds_one_plan(
    tiny, make_context, tmp_path, counted_plans
):
    ctx = make_context(chat_model=_constant(), k=4)
    run = evaluate(
        tiny,
        context=ctx,
        methods=["naive"],
        options=EvalOptions(
            run_dir=tmp_path / "run", eval_store=str(tmp_path / "eval.db"), progress=False, setting="oracle"
        ),
    )
    rows = read_rows(run)
    assert len(rows) == 3 and all(r["recall"] == 1.0 for r in rows)  # each question its own filter
    assert len(counted_plans) == 1, counted_plans


def test_a_delete_by_another_process_misses_the_cache_of_a_long_running_one(
    server_uri, demo_corpus, make_context, fake_embeddings
):
    """Two real processes on one Milvus server: this one searches (the second search is a cache
    hit), another process deletes the file it found, and this one's next search misses the cache
    and does not serve the deleted text (attack round 3: it did, "search cache hit")."""
    import subprocess
    import sys
    import textwrap

    from rag_graphs.store import ChunkIndex

    index = ChunkIndex(uri=server_uri, collection="shared", embeddings=fake_embeddings)
    ingest([demo_corpus], index=index, options=IngestOptions(progress=False, timeout=None))
    for mode in ("hybrid", "graph"):
        ctx = make_context(
            chat_model=_constant(), k=3, store_uri=server_uri, collection="shared", search_mode=mode
        )
        first = _ask(ctx)
        assert _said_cached(_ask(ctx))
        gone = first["documents"][0].metadata["source"]
        script = textwrap.dedent(
            f"""
            from langchain_core.embeddings import DeterministicFakeEmbedding
            from rag_graphs.store import ChunkIndex
            embeddings = DeterministicFakeEmbedding(size=32)
            index = ChunkIndex(uri={server_uri!r}, collection="shared", embeddings=embeddings)
            assert index.delete_source({gone!r}) > 0
            """
        )
        subprocess.run([sys.executable, "-c", script], check=True, timeout=300)
        again = _ask(ctx)
        assert not _said_cached(again), mode
        assert gone not in {d.metadata["source"] for d in again["documents"]}, mode
