"""The retrieval loop's stop on the extract reader's confidence (``RagContext.stop_rule``, issue 51).

The shared ``decide`` node is run directly on a hand-made state, so what the reader finds is
fixed by the passages: a birth year stated outright (found), or no date at all (not found).
"""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langgraph.runtime import Runtime

from rag_graphs.config.context import RagContext
from rag_graphs.nodes.decide import decide, stops_by_reader
from tests.conftest import recording_chat

QUESTION = "When was Ada Lovelace born?"
FOUND = Document(page_content="Ada Lovelace was born in 1815 in London.", id="found")
MISSING = Document(page_content="Ada Lovelace wrote the first program.", id="missing")
ENOUGH_AND_QUERY = '{"enough": true, "next_query": "Ada Lovelace birth year"}'
GO_ON = '{"enough": false, "next_query": "Ada Lovelace birth year"}'


def _decide(make_context, docs: list[Document], *replies: str, hops: int = 1, **settings):
    """The decide node's update on ``docs`` after ``hops`` retrievals, and the scripted model."""
    model = recording_chat(*replies)
    ctx = make_context(chat_model=model, **settings)
    state = {"question": QUESTION, "documents": docs, "hops": hops, "searches": [{"query": QUESTION}]}
    return decide(state, Runtime(context=ctx)), model


def test_the_reader_stops_the_loop_without_asking_the_model(make_context):
    update, model = _decide(make_context, [FOUND], ENOUGH_AND_QUERY, reader="extract")
    assert update["stop_kind"] == "enough"
    assert model.seen == []  # no model call at all
    assert not update["usage"].get("llm_calls")
    text = update["steps"][0]["text"]
    assert "via reader" in text and "'1815'" in text


def test_without_an_answer_the_model_decides(make_context):
    # The reader finds no date: the model is asked, and its word goes (on, with its query).
    update, model = _decide(make_context, [MISSING], GO_ON, reader="extract")
    assert len(model.seen) == 1
    assert update["stop_kind"] is None and update["query"] == "Ada Lovelace birth year"
    assert "no date candidate" in update["steps"][0]["text"]


def test_a_confident_reader_overrules_a_model_that_would_go_on(make_context):
    update, model = _decide(make_context, [MISSING, FOUND], GO_ON, reader="extract")
    assert update["stop_kind"] == "enough" and model.seen == []


def test_the_model_rule_never_asks_the_reader(make_context):
    # stop_rule="model" keeps the old rule on the extract path: the passages hold 1815, yet the
    # model's "go on" goes.
    update, model = _decide(make_context, [FOUND], GO_ON, reader="extract", stop_rule="model")
    assert update["stop_kind"] is None and len(model.seen) == 1
    assert "reader" not in update["steps"][0]["text"]


def test_the_generate_reader_keeps_the_model_rule(make_context):
    # auto on a run the chat model answers: the reader is not asked, though it would find 1815.
    update, model = _decide(make_context, [FOUND], GO_ON)
    assert update["stop_kind"] is None and update["query"] == "Ada Lovelace birth year"
    assert len(model.seen) == 1


@pytest.mark.parametrize(
    "reader,stop_rule,expected",
    [
        ("extract", "auto", True),
        ("generate", "auto", False),
        ("extract", "model", False),
        ("generate", "reader", True),
    ],
)
def test_auto_follows_the_reader(reader, stop_rule, expected):
    ctx = RagContext(chat_model="openai:gpt-4.1-mini", reader=reader, stop_rule=stop_rule)
    assert stops_by_reader(ctx) is expected


def test_auto_on_the_embedded_model_stops_by_the_reader():
    assert stops_by_reader(RagContext(chat_model="embedded")) is True


def test_the_stop_rule_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("RAG_GRAPHS_STOP_RULE", "model")
    assert RagContext().stop_rule == "model"
    monkeypatch.setenv("RAG_GRAPHS_STOP_RULE", "never")
    with pytest.raises(ValueError, match="RAG_GRAPHS_STOP_RULE"):
        RagContext()


def test_iterative_on_the_extract_path_stops_after_one_model_call(tmp_path, index, make_context):
    # The whole loop: retrieve, the intermediate answer (the one model call), the reader finds
    # 1815 so decide asks nothing, and the extract reader answers (no call either).
    from rag_graphs.ingestion import IngestOptions, ingest
    from rag_graphs.methods import get_graph

    (tmp_path / "ada.txt").write_text("Ada Lovelace was born in 1815 in London.\n", encoding="utf-8")
    ingest([tmp_path / "ada.txt"], index=index, options=IngestOptions(progress=False))
    model = recording_chat("Ada Lovelace was born in 1815.")
    out = get_graph("iterative").invoke(
        {"question": QUESTION}, context=make_context(chat_model=model, reader="extract", k=1)
    )
    assert [s["node"] for s in out["steps"] if s["kind"] != "note"][:3] == [
        "retrieve",
        "intermediate",
        "decide",
    ]
    assert out["usage"]["llm_calls"] == 1 and len(model.seen) == 1
    assert out["stop_reason"] == "enough" and out["answer"].startswith("1815")
