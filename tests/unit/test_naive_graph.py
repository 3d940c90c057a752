"""Naive RAG wiring with a scripted chat model over a real Milvus Lite store."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from rag_graphs.methods import get_graph
from rag_graphs.methods.naive import build, graph

QUESTION = "Where was Ilsa Brandt born?"


def test_graph_shape_is_retrieve_then_generate():
    edges = {(e.source, e.target) for e in build().compile().get_graph().edges}
    assert edges == {
        ("__start__", "begin"),  # rag_graphs.nodes.fresh: a new question starts from a clean run state
        ("begin", "retrieve"),
        ("retrieve", "generate"),
        ("generate", "__end__"),
    }
    assert graph.name == "naive" and get_graph("naive") is graph


def test_answer_cites_stored_chunks_and_reports_steps_and_usage(loaded, make_context):
    reply = AIMessage(
        content="Ilsa Brandt was born in Korvik [1].",
        usage_metadata={"input_tokens": 120, "output_tokens": 9, "total_tokens": 129},
    )
    ctx = make_context(reply, k=3)
    out = graph.invoke({"question": QUESTION}, context=ctx)
    assert set(out) >= {"answer", "citations", "documents", "steps", "usage"}
    assert out["answer"] == "Ilsa Brandt was born in Korvik [1]."
    assert len(out["documents"]) == 3
    (cite,) = out["citations"]
    assert cite["explicit"] and cite["chunk_id"] == out["documents"][0].id
    stored = loaded.get([cite["chunk_id"]])
    assert stored and stored[0].page_content.startswith(cite["quote"][:50])
    assert [s["node"] for s in out["steps"]] == ["retrieve", "generate"]
    assert out["steps"][0]["query"] == QUESTION
    assert out["steps"][0]["doc_ids"] == [d.id for d in out["documents"]]
    assert out["usage"] == {
        "retrievals": 1,
        "hops": 1,
        "llm_calls": 1,
        "prompt_tokens": 120,
        "completion_tokens": 9,
    }


def test_prompt_contains_the_question_and_the_numbered_passages(loaded, make_context):
    ctx = make_context("Korvik")
    seen = []
    model = ctx.chat_model
    original = type(model)._generate

    def spy(self, messages, *a, **kw):
        seen.append(messages)
        return original(self, messages, *a, **kw)

    type(model)._generate = spy
    try:
        out = graph.invoke({"question": QUESTION}, context=ctx)
    finally:
        type(model)._generate = original
    human = seen[0][-1].content
    assert QUESTION in human and "[1]\n<passage>\n(" in human
    # No [n] marker in the reply: the passages shown are cited, flagged as inferred.
    assert len(out["citations"]) == len(out["documents"]) and not out["citations"][0]["explicit"]


def test_empty_store_still_answers_and_cites_nothing(index, make_context):
    from langchain_core.documents import Document

    gone = {"chunk_id": "gone", "source": "a.md", "kind": "text"}
    index.add([Document(page_content="A passage deleted again.", metadata=gone)])
    index.delete_ids(["gone"])  # the collection exists and holds nothing (a missing one is refused)
    out = graph.invoke({"question": QUESTION}, context=make_context("I do not know."))
    assert out["answer"] == "I do not know." and out["documents"] == [] and out["citations"] == []


def test_progress_events_are_streamed(loaded, make_context):
    ctx = make_context("Korvik [1]")
    events = [
        c
        for mode, c in graph.stream({"question": QUESTION}, context=ctx, stream_mode=["custom", "values"])
        if mode == "custom"
    ]
    assert [(e["node"], e["event"]) for e in events] == [
        ("retrieve", "start"),
        ("retrieve", "end"),
        ("generate", "start"),
        ("generate", "end"),
    ]


def test_unknown_method_lists_the_available_ones():
    with pytest.raises(ValueError, match="naive"):
        get_graph("nope")


def test_keeping_hybrids_top_is_the_default_and_reaches_graph_search(monkeypatch, index):
    """``keep_first=1`` / ``keep_in_top=2`` (issue 28's never-lose setting, chosen on the tune
    halves) are the defaults and reach ``graph_search`` as the context's one options object
    (graph search then runs the hybrid search whose top it keeps: ``test_graph_ranking``); both at
    0, nothing of hybrid's is protected."""
    from rag_graphs.config.context import RagContext
    from rag_graphs.config.graph_search import GraphSearchOptions
    from rag_graphs.entity_graph import graph_search
    from rag_graphs.search.retrieval import PlanKey
    from rag_graphs.search.searchers import GraphSearcher

    seen = {}

    def recorded(index, query, *, k, expr, options, state=None):
        seen.update(k=k, options=options)
        return graph_search.GraphHits(hits=[])

    monkeypatch.setattr(graph_search, "graph_search", recorded)
    ctx = RagContext()
    key = PlanKey.of(ctx)
    assert key.graph is ctx.graph_search and key.graph.protects_hybrid()
    assert (key.graph.keep_first, key.graph.keep_in_top) == (1, 2)
    GraphSearcher(index, key.graph).search(["Where is Korvik?"], k=3, expr=None)
    assert seen == {"k": 3, "options": ctx.graph_search}
    assert PlanKey.of(RagContext(search_mode="hybrid")).graph is None  # not part of a hybrid plan
    monkeypatch.setenv("RAG_GRAPHS_GRAPH_KEEP_FIRST", "0")
    off = PlanKey.of(RagContext(graph_search=GraphSearchOptions(keep_in_top=0, learned_rank=False))).graph
    assert off is not None and (off.keep_first, off.keep_in_top) == (0, 0) and not off.protects_hybrid()
    assert GraphSearchOptions(keep_in_top=0).protects_hybrid()  # the learned ranker reads hybrid's ranking
