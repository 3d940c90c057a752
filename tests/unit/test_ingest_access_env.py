"""``RAG_GRAPHS_TENANT`` / ``RAG_GRAPHS_TAGS`` label what ``ingest`` stores (issue 50 item 11).

The variables restrict every search of a run to a tenant and tags; ingest used to ignore them in
silence, so the chunks were stored unlabelled and that tenant's searches never found them. Each
test ingests a small Markdown file for real (Docling, the chunker, a Milvus Lite store in a
temporary folder; fake embeddings) and then searches as the tenant would.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from rag_graphs import RagContext, RagRetriever
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.store import ChunkIndex

QUESTION = "Where was Ilsa Brandt born?"


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    path = tmp_path / "docs" / "brandt.md"
    path.parent.mkdir()
    path.write_text("# Ilsa Brandt\n\nIlsa Brandt, who founded the Velmora Institute, was born in Korvik.\n")
    return path


def _found(store: str, fake_embeddings, **access) -> list[dict]:
    """The chunks a search of ``QUESTION`` under ``access`` (tenant, tags) returns, as metadata."""
    ctx = RagContext(store_uri=store, collection="labels", embeddings=fake_embeddings, **access)
    return [d.metadata for d in RagRetriever(context=ctx).invoke(QUESTION)]


def test_the_environments_tenant_and_tags_label_what_ingest_stores(
    doc, tmp_path, fake_embeddings, monkeypatch
):
    store = str(tmp_path / "milvus.db")
    monkeypatch.setenv("RAG_GRAPHS_TENANT", "acme")
    monkeypatch.setenv("RAG_GRAPHS_TAGS", "hr,public")
    ctx = RagContext(store_uri=store, collection="labels", embeddings=fake_embeddings)  # reads them
    report = ingest([doc], index=ctx, options=IngestOptions(progress=False, timeout=None, entities=None))
    assert report.chunks == 1 and not report.failed
    monkeypatch.delenv("RAG_GRAPHS_TENANT")
    monkeypatch.delenv("RAG_GRAPHS_TAGS")
    (hit,) = _found(store, fake_embeddings, tenant="acme")  # acme's search finds it
    assert hit["tenant"] == "acme" and hit["tags"] == ["hr", "public"] and hit["source"] == str(doc)
    assert _found(store, fake_embeddings, tags=("hr",))  # so does a search under one of its tags
    assert _found(store, fake_embeddings, tenant="globex") == []  # and another tenant's does not


def test_without_a_context_ingest_reads_the_variables_and_a_keyword_wins(
    doc, tmp_path, fake_embeddings, monkeypatch
):
    store = str(tmp_path / "milvus.db")
    index = ChunkIndex(uri=store, collection="labels", embeddings=fake_embeddings)
    monkeypatch.setenv("RAG_GRAPHS_TENANT", "acme")
    ingest([doc], index=index, options=IngestOptions(progress=False, timeout=None, entities=None))
    assert [h["tenant"] for h in _found(store, fake_embeddings, tenant="acme")] == ["acme"]
    ingest(
        [doc],
        index=index,
        options=IngestOptions(progress=False, timeout=None, entities=None, tenant="globex"),
    )
    assert [h["tenant"] for h in _found(store, fake_embeddings, tenant="globex")] == ["globex"]
    ingest(
        [doc], index=index, options=IngestOptions(progress=False, timeout=None, entities=None, tenant=None)
    )  # said so
    assert [h.get("tenant") for h in _found(store, fake_embeddings, tenant=None)] == [None]
    monkeypatch.setenv("RAG_GRAPHS_TENANT", "")  # set but naming nothing: refused, as for a search
    with pytest.raises(ValidationError, match="RAG_GRAPHS_TENANT='' is set but names no value"):
        ingest([doc], index=index, options=IngestOptions(progress=False, timeout=None, entities=None))


def test_the_cli_ingest_labels_with_the_variables_unless_a_flag_is_given(
    doc, tmp_path, fake_embeddings, monkeypatch
):
    import rag_graphs.ingestion.pipeline as pipeline
    from rag_graphs.cli import app

    monkeypatch.setattr(pipeline, "load_embeddings", lambda spec: fake_embeddings)
    store = str(tmp_path / "milvus.db")
    args = ["ingest", str(doc), "--store", store, "--collection", "labels", "--no-graph", "--timeout", "0"]
    env = {"RAG_GRAPHS_TENANT": "acme", "RAG_GRAPHS_TAGS": "hr"}
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    (hit,) = _found(store, fake_embeddings, tenant="acme")
    assert hit["tenant"] == "acme" and hit["tags"] == ["hr"]
    result = CliRunner().invoke(app, [*args, "--tenant", "globex"], env=env)  # the flag wins, as for ask
    assert result.exit_code == 0, result.output
    (hit,) = _found(store, fake_embeddings, tenant="globex")
    assert hit["tenant"] == "globex" and hit["tags"] == ["hr"]
    assert _found(store, fake_embeddings, tenant="acme") == []  # relabelled: replaced, not copied
    result = CliRunner().invoke(app, [*args, "--tenant", ""], env=env)  # an empty flag: refused as before
    assert result.exit_code == 1 and "tenant='': expected a non-empty string" in result.output
