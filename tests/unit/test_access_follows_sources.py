"""Access labels reach everything derived from a chunk (issue 30, part A).

What is built from a chunk follows every delete and relabel of its file and every access
filter: the RAPTOR tree (its leaf copies and the summaries over them) and the chunks that
``--expand`` adds beside a hit. An empty access variable fails closed, as in Python.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from rag_graphs.config.context import RagContext
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.ingestion.raptor import build_tree, tree_collection
from rag_graphs.methods import get_graph
from rag_graphs.search.retrieval import search
from rag_graphs.search.sources import delete_sources, source_key
from rag_graphs.search.tree import tree_context
from rag_graphs.store import open_index
from rag_graphs.store.filters import quote
from tests.unit.test_access_control import Echo

SECRET = "RELABEL-CANARY-4410"
QUESTION = "What does the memo say about Ilsa Brandt?"


@pytest.fixture
def memo_tree(index, tmp_path: Path):
    """acme's two files, one of them a memo holding the canary, and a tree summarised by Echo
    (which copies its children's text: a stale summary would show the canary)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    memo = folder / "memo.md"
    memo.write_text(f"# Memo\n\nIlsa Brandt memo: {SECRET}, the board's private note.\n")
    (folder / "public.md").write_text("# Public\n\nIlsa Brandt was born in Korvik, a harbour town.\n")
    (folder / "more.md").write_text("# More\n\nKorvik is a granite town on the northern coast.\n")
    ingest([folder], index=index, options=IngestOptions(tenant="acme", progress=False))
    build_tree(index, Echo(), progress=False)
    return index, memo


def _tree_text(make_context, **access) -> str:
    ctx = tree_context(make_context(k=100, search_cache=0, **access))
    return " ".join(d.page_content for d in search(ctx, QUESTION))


def _tree_nodes(index):
    return open_index(index.uri, tree_collection(index.collection), index.embeddings).iter_chunks()


def test_a_relabelled_file_leaves_the_tree_for_its_old_tenant(memo_tree, make_context):
    index, memo = memo_tree
    assert SECRET in _tree_text(make_context, tenant="acme")  # the attack's premise
    ingest([memo], index=index, options=IngestOptions(tenant="globex", progress=False))
    assert SECRET not in _tree_text(make_context, tenant="acme")
    out = get_graph("raptor").invoke({"question": QUESTION}, context=make_context("ok", tenant="acme", k=50))
    assert all(SECRET not in d.page_content for d in out["documents"]) and out["documents"]
    build_tree(index, Echo(), progress=False)  # the rebuilt tree has it under its new label only
    assert SECRET not in _tree_text(make_context, tenant="acme")
    assert SECRET in _tree_text(make_context, tenant="globex")


def test_a_deleted_file_leaves_the_tree_also_after_a_rebuild(memo_tree, make_context):
    index, memo = memo_tree
    delete_sources(index, [memo])
    assert SECRET not in _tree_text(make_context)
    assert all(SECRET not in d.page_content for d, _ in _tree_nodes(index))
    report = build_tree(index, Echo(), progress=False)
    assert report.pruned == 0 and SECRET not in _tree_text(make_context)
    assert "Korvik" in _tree_text(make_context)  # the other files' nodes stay searchable


def test_a_rebuild_prunes_a_tree_that_missed_a_delete_and_refreshes_stale_labels(memo_tree, make_context):
    index, memo = memo_tree
    tree = open_index(index.uri, tree_collection(index.collection), index.embeddings)
    gone = index.where(f"source == {quote(source_key(memo))}")
    index.client.delete(index.collection, ids=[str(d.id) for d in gone])  # a store from before the fix
    public = next(d for d in index.where('source like "%public.md"'))
    tree.client.delete(tree.collection, ids=[str(public.id)])  # a leaf copy with a wrong label
    tree.add(
        [
            public.model_copy(
                update={"metadata": {**public.metadata, "tenant": "globex", "level": 0, "children": []}}
            )
        ]
    )
    report = build_tree(index, Echo(), progress=False)
    assert report.pruned > len(gone)  # the leaves and the summaries above them
    assert SECRET not in _tree_text(make_context)
    (leaf,) = tree.get([str(public.id)])
    assert leaf.metadata["tenant"] == "acme"


def test_expansion_adds_only_chunks_the_search_filter_admits(index, tmp_path, make_context):
    doc = tmp_path / "mixed.md"
    doc.write_text(
        "# Report\n\nIlsa Brandt was born in Korvik, a harbour town of granite.\n\n"
        "| person | salary |\n|---|---|\n| Ilsa Brandt | 9000 |\n\n"
        "Ilsa Brandt later moved to the capital for work.\n"
    )
    ingest([doc], index=index, options=IngestOptions(progress=False))
    assert {d.metadata["kind"] for d in index.where('source like "%mixed.md"')} >= {"text", "table"}

    def kinds(expand: str = "neighbours:2", **overrides) -> set[str]:
        ctx = make_context("Korvik.", k=1, search_cache=0, expand=expand, **overrides)
        out = get_graph("naive").invoke({"question": "Where was Ilsa Brandt born?"}, context=ctx)
        return {d.metadata["kind"] for d in out["documents"]}

    assert "table" in kinds()  # control: unfiltered, expansion brings the table in
    assert kinds(search_filter='kind == "text"') == {"text"}
    assert kinds(expand="section", search_filter='kind == "text"') == {"text"}


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("RAG_GRAPHS_TENANT", ""),
        ("RAG_GRAPHS_TENANT", "  "),
        ("RAG_GRAPHS_TAGS", ","),
        ("RAG_GRAPHS_TAGS", ""),
        ("RAG_GRAPHS_SOURCES", ",,"),
    ],
)
def test_an_empty_access_variable_is_refused_naming_it(monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    with pytest.raises((ValueError, ValidationError), match=variable):
        RagContext()


@pytest.mark.parametrize(
    "access", [{"tenant": ""}, {"tenant": " "}, {"tags": ("",)}, {"tags": ""}, {"sources": (" ",)}]
)
def test_an_empty_access_value_is_refused_in_python(access):
    (name,) = access
    with pytest.raises(ValidationError, match=f"RagContext.{name}"):
        RagContext(**access)


def test_unset_access_variables_restrict_nothing():
    ctx = RagContext()
    assert (ctx.tenant, ctx.tags, ctx.sources) == (None, (), ())
