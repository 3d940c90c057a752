"""Graph search as the default engine (issue 28 item 4): ingest builds the entity graph of a new
collection, ``search_mode="auto"`` walks it when the collection has one and searches hybrid
otherwise, and the run's first retrieve step says which ran and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_graphs.config.context import RagContext
from rag_graphs.entity_graph.build import build_graph
from rag_graphs.entity_graph.entities import load_extractor
from rag_graphs.entity_graph.rows import has_graph
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.methods import get_graph
from rag_graphs.search.retrieval import search_plan
from rag_graphs.store import ChunkIndex
from tests.unit.test_graph_ranking import BagOfWords  # words shared rank alike in dense and BM25

FILES = {
    "institute.md": "# Velmora Institute\n\nThe Velmora Institute was founded by Ilsa Brandt in 1952.",
    "brandt.md": "# Ilsa Brandt\n\nIlsa Brandt was born in Korvik and studied in Lunmar.",
}


def _docs(folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    for name, text in FILES.items():
        (folder / name).write_text(text)
    return folder


def _retrieve_texts(out: dict) -> list[str]:
    return [s.get("text", "") for s in out["steps"] if s["kind"] == "retrieve"]


def test_search_mode_defaults_to_auto():
    assert RagContext().search_mode == "auto"


def test_ingest_builds_the_graph_of_a_new_collection_and_auto_walks_it(tmp_path, index, make_context):
    report = ingest(
        [_docs(tmp_path / "docs")], index=index, options=IngestOptions(progress=False, timeout=None)
    )
    assert has_graph(index)
    assert "entity graph: built" in report.summary()
    ctx = make_context("Ilsa Brandt [1].", collection=index.collection)
    plan = search_plan(ctx)
    assert plan.mode == "graph" and "has an entity graph" in plan.why

    out = get_graph("naive").invoke({"question": "Who founded the Velmora Institute?"}, context=ctx)
    (text,) = _retrieve_texts(out)
    assert text.startswith(plan.why + "; graph seeds:")


def test_without_a_graph_auto_searches_hybrid_and_says_how_to_get_one(tmp_path, index, make_context):
    report = ingest(
        [_docs(tmp_path / "docs")],
        index=index,
        options=IngestOptions(entities=None, progress=False, timeout=None),
    )
    assert not has_graph(index)
    assert "entity graph: none (--no-graph" in report.summary()
    ctx = make_context("Ilsa Brandt [1].", collection=index.collection)
    out = get_graph("naive").invoke({"question": "Who founded the Velmora Institute?"}, context=ctx)
    (text,) = _retrieve_texts(out)
    assert text.startswith("hybrid search (search_mode=auto") and "rag-graphs graph build" in text
    assert "graph seeds" not in text


def test_a_collection_stored_without_a_graph_is_not_given_part_of_one(tmp_path, index):
    """A re-ingest with the default would annotate only the new chunks, and graph search over
    part of a collection ranks the rest out: the collection stays without, and the report says
    how to build the whole graph."""
    folder = _docs(tmp_path / "docs")
    ingest([folder], index=index, options=IngestOptions(entities=None, progress=False, timeout=None))
    (folder / "more.md").write_text("# Korvik\n\nKorvik is a harbour town in the north.")
    report = ingest([folder], index=index, options=IngestOptions(progress=False, timeout=None))
    assert not has_graph(index)
    assert "stored without one" in report.graph and "rag-graphs graph build" in report.graph


def test_a_graph_built_after_the_first_search_is_walked_by_the_next(tmp_path, index, make_context):
    """An ``auto`` plan resolved to hybrid search is resolved again once this process builds
    the collection's graph: a notebook that ingests, searches, then builds the graph walks it."""
    ingest(
        [_docs(tmp_path / "docs")],
        index=index,
        options=IngestOptions(entities=None, progress=False, timeout=None),
    )
    ctx = make_context(collection=index.collection)
    assert search_plan(ctx).mode == "hybrid"
    build_graph(index, load_extractor("spacy"), progress=False)
    assert search_plan(ctx).mode == "graph"


def test_later_rounds_do_not_repeat_which_search_ran(tmp_path, index, make_context):
    ingest([_docs(tmp_path / "docs")], index=index, options=IngestOptions(progress=False, timeout=None))
    replies = ("Velmora founder", "Ilsa Brandt", "Where was Ilsa Brandt born?", "Korvik", "Korvik [2].")
    ctx = make_context(*replies, collection=index.collection, fixed_hops=2)
    out = get_graph("fixed_step").invoke({"question": "Who founded the Velmora Institute?"}, context=ctx)
    first, second = _retrieve_texts(out)
    assert first.startswith("graph search (search_mode=auto") and "graph seeds:" in first
    assert second.startswith("graph seeds:")


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_an_explicit_mode_runs_as_asked_and_says_so(tmp_path, index, make_context, mode):
    ingest([_docs(tmp_path / "docs")], index=index, options=IngestOptions(progress=False, timeout=None))
    plan = search_plan(make_context(collection=index.collection, search_mode=mode))
    assert (plan.mode, plan.why) == (mode, f"{mode} search (search_mode={mode})")


def test_own_retriever_takes_auto_as_dense(fake_embeddings):
    from langchain_core.vectorstores import InMemoryVectorStore

    mine = InMemoryVectorStore.from_texts(["Ilsa Brandt founded it."], embedding=fake_embeddings)
    ctx = RagContext(embeddings=fake_embeddings, retriever=mine, search_mode="auto")
    plan = search_plan(ctx)
    assert plan.mode == "dense" and "InMemoryVectorStore" in plan.why


CHAIN = {
    **FILES,
    "kestrel.md": "# Kestrel Museum\n\nThe founder of the Kestrel Museum was born at sea.",
    "osterby.md": "# Osterby\n\nThe harbour of Osterby is busy in spring. Boats leave daily for the islands.",
}


def test_the_default_walk_finds_hop_two_and_keeps_a_one_hop_questions_best_hit_first(
    tmp_path, index, make_context
):
    """With every default (auto: graph search; hybrid's first hit kept first, its first two in
    the top k): a two-hop question's second passage, which shares only an entity with the first,
    ranks above a distractor that shares the question's words; a one-hop question's best hybrid
    hit stays first."""
    from rag_graphs.search.retrieval import search

    folder = tmp_path / "chain"
    folder.mkdir()
    for name, text in CHAIN.items():
        (folder / name).write_text(text)
    words_index = ChunkIndex(uri=index.uri, collection="chain", embeddings=BagOfWords())
    ingest([folder], index=words_index, options=IngestOptions(progress=False, timeout=None))
    same = {"collection": "chain", "embeddings": words_index.embeddings, "k": 4, "search_cache": 0}
    graph_ctx = make_context(**same)
    hybrid_ctx = make_context(**same, search_mode="hybrid")
    assert search_plan(graph_ctx).mode == "graph"

    def names(ctx, question):
        return [Path(d.metadata["source"]).name for d in search(ctx, question)]

    question = "Where was the founder of the Velmora Institute born?"
    words = names(hybrid_ctx, question)
    assert words.index("kestrel.md") < words.index("brandt.md")  # the distractor has the words
    walked = names(graph_ctx, question)
    assert walked.index("brandt.md") < walked.index("kestrel.md")  # the walk has the entity
    one_hop = "Which boats leave the harbour of Osterby daily?"
    assert names(graph_ctx, one_hop)[0] == names(hybrid_ctx, one_hop)[0] == "osterby.md"


@pytest.mark.parametrize("flag", ["--graph", "--no-graph"])
def test_the_ingest_command_builds_the_graph_unless_told_not_to(tmp_path, flag):
    """``rag-graphs ingest`` (embedded MiniLM, as users run it) builds the entity graph by
    default and says so; ``--no-graph`` stores the chunks alone and says that."""
    from typer.testing import CliRunner

    from rag_graphs import cli
    from rag_graphs.store import ChunkIndex, load_embeddings

    store = str(tmp_path / "cli.db")
    args = [
        "ingest",
        str(_docs(tmp_path / "docs")),
        "--store",
        store,
        "--collection",
        "docs",
        "--timeout",
        "0",
    ]
    result = CliRunner().invoke(cli.app, [*args, flag])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())  # rich wraps long lines
    index = ChunkIndex(uri=store, collection="docs", embeddings=load_embeddings("embedded"))
    if flag == "--graph":
        assert "entity graph: built (spaCy NER" in output and has_graph(index)
    else:
        assert "entity graph: none (--no-graph" in output and not has_graph(index)
