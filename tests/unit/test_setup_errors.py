"""Setup mistakes are loud: each is refused before any search or model call, in one line that
names the setting and the fix (``rag_graphs.store.checks``); a check the model's reply cannot
be read for never passes.

Each used to run on quietly: a missing store was created empty and every answer was
``no_evidence`` with exit status 0; an unknown collection the same; ``hipporag`` without an
entity graph fell back to hybrid search; a missing provider package failed after retrieval.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from rag_graphs.config.errors import SetupError
from rag_graphs.entity_graph.rows import has_graph
from rag_graphs.llm.models import PROVIDER_PACKAGES
from rag_graphs.methods import get_graph
from tests.unit.test_multihop import COMPLETE, _self_rag

QUESTION = "Where was Ilsa Brandt born?"


def silent() -> GenericFakeChatModel:
    """A chat model that must not be called: it has no reply to give."""
    return GenericFakeChatModel(messages=iter([]))


def one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


def test_a_store_that_does_not_exist_is_refused_not_created(tmp_path: Path, make_context):
    missing = tmp_path / "nope" / "milvus.db"
    ctx = make_context(chat_model=silent(), store_uri=str(missing))
    with pytest.raises(SetupError) as error:
        get_graph("naive").invoke({"question": QUESTION}, context=ctx)
    message = one_line(error)
    assert "RAG_GRAPHS_STORE_URI" in message and "does not exist" in message
    assert f"rag-graphs ingest PATH --store {missing}" in message
    assert not missing.exists()


def test_an_unknown_collection_is_refused_naming_the_ones_there_are(loaded, make_context):
    ctx = make_context(chat_model=silent(), collection="nope")
    with pytest.raises(SetupError) as error:
        get_graph("iterative").invoke({"question": QUESTION}, context=ctx)
    message = one_line(error)
    assert "collection 'nope'" in message and "--collection" in message and "'test'" in message


def test_graph_search_without_an_entity_graph_is_refused(demo_corpus, index, make_context):
    from rag_graphs.ingestion import IngestOptions, ingest

    ingest([demo_corpus], index=index, options=IngestOptions(entities=None, progress=False))  # --no-graph
    assert not has_graph(index)
    with pytest.raises(Exception) as error:
        get_graph("hipporag").invoke({"question": QUESTION}, context=make_context(chat_model=silent()))
    assert isinstance(error.value.__cause__ or error.value, SetupError)
    message = str(error.value)
    assert "no entity graph" in message and "rag-graphs graph build --collection test" in message


def test_a_missing_provider_package_is_refused_before_any_search(loaded, make_context, monkeypatch):
    monkeypatch.setitem(PROVIDER_PACKAGES, "acme", ("no_such_provider_module", "langchain-acme"))
    ctx = make_context(chat_model="acme:model-1")
    searched: list[str] = []
    monkeypatch.setattr(type(loaded), "search_many", lambda *a, **k: searched.append("x") or [])
    with pytest.raises(SetupError) as error:
        get_graph("naive").invoke({"question": QUESTION}, context=ctx)
    message = one_line(error)
    assert "'acme:model-1'" in message and "RAG_GRAPHS_CHAT_MODEL" in message
    assert "pip install 'langchain-acme'" in message
    assert searched == []


def test_self_rag_checks_that_cannot_be_read_never_pass(loaded, make_context):
    replies = ['{"retrieve": true}', '{"score": 8}', "Korvik [1].", "Maybe so.", "Hard to say."]
    out, _ = _self_rag(make_context, *replies, k=1, max_hops=1)
    assert out["outcome"] == "unreliable" and out["confidence"] == "low"
    assert out["answer"] != "Korvik [1]." and out["citations"] == []
    check = [s["text"] for s in out["steps"] if s["node"] == "check"][-1]
    assert "grounded=False" in check and "via default" in check


def test_control_a_readable_grounded_check_still_passes(loaded, make_context):
    replies = ['{"retrieve": true}', '{"score": 8}', "Korvik [1].", '{"grounded": true}', COMPLETE]
    out, _ = _self_rag(make_context, *replies, k=1, max_hops=1)
    assert (out["answer"], out["outcome"]) == ("Korvik [1].", "answered")


def test_a_foreign_context_is_refused_not_replaced_by_environment_defaults(loaded, make_context):
    """A method graph inside an app graph with its own ``context_schema`` gets that context."""
    from dataclasses import dataclass

    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    @dataclass
    class AppContext:
        user: str = "ada"

    class AppState(TypedDict, total=False):
        question: str
        answer: str

    app = StateGraph(AppState, context_schema=AppContext)
    app.add_node("rag", get_graph("naive"))
    app.add_edge(START, "rag")
    app.add_edge("rag", END)
    with pytest.raises(TypeError) as error:
        app.compile().invoke({"question": QUESTION}, context=AppContext())
    message = one_line(error)
    assert "AppContext, not a RagContext" in message and "context=RagContext(" in message


def test_an_embedding_model_of_another_dimension_is_refused(loaded, make_context):
    from langchain_core.embeddings import DeterministicFakeEmbedding

    ctx = make_context(chat_model=silent(), embeddings=DeterministicFakeEmbedding(size=16))
    with pytest.raises(SetupError) as error:
        get_graph("naive").invoke({"question": QUESTION}, context=ctx)
    message = one_line(error)
    assert "16-d vectors" in message and "32-d" in message and "RAG_GRAPHS_EMBEDDINGS" in message


def test_eval_resume_continues_every_method_of_the_run(tiny, tmp_path, monkeypatch):
    """``eval --resume RUN`` without ``-m`` runs the run's own methods (it used to run ``naive``
    alone and say nothing of the others)."""
    import json

    from typer.testing import CliRunner

    import rag_graphs.eval
    from rag_graphs.cli import app
    from rag_graphs.eval.runner import CONFIG

    run = tmp_path / "run"
    run.mkdir()
    (run / CONFIG).write_text(json.dumps({"dataset": str(tiny), "methods": ["naive", "ircot"], "k": 4}))
    asked: list[list[str]] = []

    def fake_evaluate(dataset, methods, **kwargs):
        asked.append(list(methods))
        raise ValueError("stop here")

    monkeypatch.setattr(rag_graphs.eval, "evaluate", fake_evaluate)
    CliRunner().invoke(app, ["eval", "--resume", str(run), "--store", str(tmp_path / "s.db")])
    CliRunner().invoke(
        app, ["eval", "--resume", str(run), "-m", "iterative", "--store", str(tmp_path / "s.db")]
    )
    CliRunner().invoke(app, ["eval", "--dataset", str(tiny), "--store", str(tmp_path / "s.db")])
    assert asked == [["naive", "ircot"], ["iterative"], ["naive"]]


def test_a_collection_dropped_mid_run_is_named_not_a_crash(loaded, make_context):
    """Searches do not ask the store whether the collection exists (``begin`` checked it once
    per run, ``rag_graphs.search.retrieval.search_plan``); one dropped after that still fails
    the run with the one-line ``SetupError`` naming it, not Milvus's own error."""

    class Dropping(GenericFakeChatModel):
        """IRCoT's reasoning model, which drops the collection before its first thought."""

        def _generate(self, *args, **kwargs):
            if loaded.client.has_collection(loaded.collection):
                loaded.client.drop_collection(loaded.collection)
            return super()._generate(*args, **kwargs)

    thoughts = iter(AIMessage(content=r) for r in ["Ilsa Brandt founded it.", "So the answer is: Korvik."])
    ctx = make_context(chat_model=Dropping(messages=thoughts), search_cache=0)
    with pytest.raises(Exception) as error:
        get_graph("ircot").invoke({"question": QUESTION}, context=ctx)
    assert isinstance(error.value, SetupError) or isinstance(error.value.__cause__, SetupError), error.value
    assert "collection 'test'" in str(error.value) and "is not in store" in str(error.value)
