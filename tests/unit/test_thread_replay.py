"""A finished thread's result is served again only to the same run: same question, method, store,
collection, access labels and store state. Anything else runs anew (attack round 3: another tenant
on the same thread got acme's passages, a deleted file's text came back, and another method on
another store returned the first run's result)."""

from __future__ import annotations

import itertools

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.run import Resumed, ThreadConflict, run, stream
from rag_graphs.store import ChunkIndex

QUESTION = "Where was Ilsa Brandt born?"


def _model() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=itertools.cycle([AIMessage(content="Korvik [1].")]))


def _replayed(method, ctx, db) -> tuple[bool, dict]:
    events = list(stream(method, QUESTION, ctx, thread_id="t", checkpoints=db))
    replay = any(isinstance(e, Resumed) and e.finished for e in events)
    return replay, events[-1].result


@pytest.fixture
def db(tmp_path):
    return tmp_path / "checkpoints.sqlite"


@pytest.fixture
def tenants(loaded, demo_corpus):
    ingest(
        [demo_corpus / "ilsa_brandt.html"],
        index=loaded,
        options=IngestOptions(tenant="acme", progress=False, timeout=None),
    )
    return loaded


def test_the_same_run_is_replayed(loaded, make_context, db):
    ctx = make_context(chat_model=_model(), k=2)
    assert _replayed("naive", ctx, db)[0] is False
    replay, result = _replayed("naive", ctx, db)
    assert replay and result["answer"] == "Korvik [1]."


def test_another_tenant_on_the_thread_runs_anew(tenants, make_context, db):
    acme = make_context(chat_model=_model(), k=2, tenant="acme")
    _, first = _replayed("naive", acme, db)
    assert first["documents"]
    replay, other = _replayed("naive", make_context(chat_model=_model(), k=2, tenant="globex"), db)
    assert not replay and other["documents"] == []


def test_a_delete_since_the_run_runs_anew_without_the_deleted_text(loaded, make_context, db):
    ctx = make_context(chat_model=_model(), k=2)
    _, first = _replayed("naive", ctx, db)
    gone = first["documents"][0].metadata["source"]
    loaded.delete_source(gone)
    replay, again = _replayed("naive", ctx, db)
    assert not replay and gone not in {d.metadata["source"] for d in again["documents"]}


def test_another_method_or_store_on_the_thread_runs_anew(loaded, make_context, db, tmp_path, demo_corpus):
    ctx = make_context(chat_model=_model(), k=2)
    _replayed("naive", ctx, db)
    assert _replayed("hyde", ctx, db)[0] is False
    other = ChunkIndex(uri=str(tmp_path / "other.db"), collection="test", embeddings=loaded.embeddings)
    ingest([demo_corpus / "korvik.txt"], index=other, options=IngestOptions(progress=False, timeout=None))
    replay, result = _replayed("hyde", make_context(chat_model=_model(), k=2, store_uri=other.uri), db)
    assert not replay and {d.metadata["source"] for d in result["documents"]} <= {
        d.metadata["source"] for d, _ in other.iter_chunks()
    }


def test_an_unfinished_run_is_not_resumed_under_another_tenant(tenants, make_context, db):
    from rag_graphs.nodes.failures import RunFailed

    broken = GenericFakeChatModel(messages=iter([]))  # fails at the answer: the run stays unfinished
    with pytest.raises(RunFailed):
        run(
            "naive",
            QUESTION,
            make_context(chat_model=broken, k=2, tenant="acme"),
            thread_id="t",
            checkpoints=db,
        )
    with pytest.raises(ThreadConflict, match="other settings"):
        run(
            "naive",
            QUESTION,
            make_context(chat_model=_model(), k=2, tenant="globex"),
            thread_id="t",
            checkpoints=db,
        )
    resumed = run(
        "naive",
        QUESTION,
        make_context(chat_model=_model(), k=2, tenant="acme"),
        thread_id="t",
        checkpoints=db,
    )
    assert resumed["answer"] == "Korvik [1]."
