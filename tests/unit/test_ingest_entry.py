"""One ingest entry, ``ingest(sources, *, index, options)`` (issue 48 item 3).

``ingest`` had three doors to a store (``uri``/``collection``/``embeddings``, ``index``,
``context``) and took every setting as an open-ended keyword; which label keywords were passed
decided whether the environment's tenant applied. Now a source is a path, a URL or a ``Text``,
``index`` is a ``ChunkIndex`` or a ``RagContext``, and every setting is an ``IngestOptions``
field whose access labels start ``Unset``: ``tenant=None`` (public) differs from not saying.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rag_graphs import RagContext
from rag_graphs.ingestion import IngestOptions, Text, ingest
from rag_graphs.ingestion.options import with_context_labels
from rag_graphs.state import Unset


def _stored(ctx: RagContext) -> dict[str, dict]:
    from rag_graphs.search.retrieval import index_for

    return {d.metadata["source"]: d.metadata for d, _ in index_for(ctx).iter_chunks()}


def test_a_path_a_url_and_a_text_go_through_one_call_into_a_contexts_store(tmp_path, fake_embeddings, site):
    page_url = (
        f"{site[0]}/brandt"  # loopback: the SSRF guard lets it through with allow_fetch, as a user opts in
    )
    (tmp_path / "gate.md").write_text("# Gate\n\nThe north gate opens at dawn.\n")
    ctx = RagContext(store_uri=str(tmp_path / "milvus.db"), collection="entry", embeddings=fake_embeddings)
    seen = []
    report = ingest(
        [tmp_path / "gate.md", page_url, Text("notes", "# Notes\n\nThe keys hang by the door.\n")],
        index=ctx,
        options=IngestOptions(
            allow_fetch=True, timeout=None, entities=None, progress=False, on_file=seen.append
        ),
    )
    assert not report.failed, report.summary()
    assert {f.path for f in report.files} == {str(tmp_path / "gate.md"), page_url, "text://notes"}
    assert [f.path for f in seen] == [f.path for f in report.files]  # on_file is an option now
    assert set(_stored(ctx)) == {str((tmp_path / "gate.md").resolve()), page_url, "text://notes"}


def test_one_source_alone_and_no_index_the_store_the_environment_names(
    tmp_path, fake_embeddings, monkeypatch
):
    import rag_graphs.ingestion.pipeline as pipeline

    monkeypatch.setattr(pipeline, "load_embeddings", lambda spec: fake_embeddings)
    monkeypatch.setenv("RAG_GRAPHS_STORE_URI", str(tmp_path / "env.db"))
    monkeypatch.setenv("RAG_GRAPHS_COLLECTION", "from_env")
    report = ingest(
        Text("alone", "One text, not in a list."), options=IngestOptions(entities=None, progress=False)
    )
    assert [f.path for f in report.files] == ["text://alone"] and report.chunks == 1
    assert list(_stored(RagContext(embeddings=fake_embeddings))) == ["text://alone"]


def test_an_explicit_public_tenant_differs_from_an_unset_one():
    ctx = RagContext(tenant="acme", tags=("hr",))
    assert IngestOptions().tenant == Unset(None) and IngestOptions().tags == Unset(())
    unset = with_context_labels(IngestOptions(), ctx)
    assert (unset.tenant, unset.tags) == ("acme", ("hr",))  # not said: the context's
    public = with_context_labels(IngestOptions(tenant=None, tags=()), ctx)
    assert (public.tenant, public.tags) == (None, ())  # said: the call's own, public
    mixed = with_context_labels(IngestOptions(tenant="globex"), ctx)
    assert (mixed.tenant, mixed.tags) == ("globex", ("hr",))
    assert replace(IngestOptions(tenant="x"), tenant=None).labels == {}  # replaced by None: public
    assert with_context_labels(IngestOptions(), None).labels == {}  # nothing anywhere: no labels


def test_an_explicit_public_tenant_wins_over_the_environment_in_a_real_ingest(
    tmp_path, fake_embeddings, monkeypatch
):
    ctx = RagContext(store_uri=str(tmp_path / "milvus.db"), collection="labels", embeddings=fake_embeddings)
    monkeypatch.setenv("RAG_GRAPHS_TENANT", "acme")
    quiet = IngestOptions(entities=None, progress=False, timeout=None)
    from rag_graphs.search.retrieval import index_for

    index = index_for(ctx)  # a ChunkIndex: the labels it leaves unset come from the environment
    ingest(Text("said", "Said public."), index=index, options=replace(quiet, tenant=None))
    ingest(Text("unsaid", "Not said."), index=index, options=quiet)
    stored = _stored(ctx)
    assert stored["text://said"].get("tenant") is None and stored["text://unsaid"]["tenant"] == "acme"


def test_misspelt_options_and_old_keywords_are_named(tmp_path):
    with pytest.raises(TypeError, match=r"unknown setting 'tenat' \(did you mean 'tenant'\?\)"):
        IngestOptions(tenat="acme")
    for old in ({"uri": "x.db"}, {"context": RagContext()}, {"progress": False}):
        with pytest.raises(TypeError, match=f"unexpected keyword argument '{next(iter(old))}'"):
            ingest([tmp_path], **old)
    with pytest.raises(TypeError, match=r"ingest: index='x\.db': expected a ChunkIndex or a RagContext"):
        ingest([tmp_path], index="x.db")  # type: ignore[arg-type]
    assert not any(Path(tmp_path).iterdir())  # refused before any store was made


def test_the_cli_dense_only_flag_still_creates_a_collection_without_bm25(
    tmp_path, fake_embeddings, monkeypatch
):
    """``hybrid`` left ``ingest``'s keywords: the CLI opens the index dense-only itself."""
    from typer.testing import CliRunner

    from rag_graphs.cli import app
    from rag_graphs.store import ChunkIndex

    monkeypatch.setattr("rag_graphs.ingestion.pipeline.load_embeddings", lambda spec: fake_embeddings)
    monkeypatch.setattr("rag_graphs.search.retrieval.load_embeddings", lambda spec: fake_embeddings)
    (tmp_path / "gate.md").write_text("# Gate\n\nThe north gate opens at dawn.\n")
    store = str(tmp_path / "milvus.db")
    for collection, flags in (("dense", ["--dense-only"]), ("both", [])):
        args = ["ingest", str(tmp_path / "gate.md"), "--store", store, "--collection", collection]
        result = CliRunner().invoke(app, [*args, "--no-graph", "--timeout", "0", *flags])
        assert result.exit_code == 0, result.output
    dense = ChunkIndex(uri=store, collection="dense", embeddings=fake_embeddings)  # asks for hybrid
    both = ChunkIndex(uri=store, collection="both", embeddings=fake_embeddings)
    assert dense.hybrid is False and both.hybrid is True and dense.count() == both.count() == 1
