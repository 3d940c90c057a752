"""Query-transformation methods (HyDE, multi-query, RAG-Fusion, step-back, decomposition, planned)
and the shared fan-out machinery, with scripted fake models."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from langchain_core.documents import Document

from rag_graphs.methods import get_graph
from rag_graphs.nodes.expand import parse_queries
from rag_graphs.nodes.failures import RunFailed
from rag_graphs.nodes.plan import fill_references
from rag_graphs.search.fusion import reciprocal_rank_fusion, unique_union
from rag_graphs.search.retrieval import search, search_many
from tests.conftest import fake_chat, recording_chat

QUESTION = "In which town was the founder of the Velmora Institute born?"


def _docs(*ids: str) -> list[Document]:
    return [Document(id=i, page_content=f"text {i}") for i in ids]


def _nodes(out) -> list[str]:
    return [s["node"] for s in out["steps"]]


def test_reciprocal_rank_fusion_matches_a_hand_computed_case():
    rankings = [_docs("a", "b", "c"), _docs("b", "c", "d"), _docs("c")]
    fused = reciprocal_rank_fusion(rankings, k=60)
    # c: 1/63 + 1/62 + 1/61, b: 1/62 + 1/61, a: 1/61, d: 1/63
    assert [d.id for d in fused] == ["c", "b", "a", "d"]
    assert fused[0].metadata["rrf_score"] == pytest.approx(1 / 63 + 1 / 62 + 1 / 61)
    assert fused[3].metadata["rrf_score"] == pytest.approx(1 / 63)
    assert [d.id for d in reciprocal_rank_fusion(rankings, k=60, top_k=2)] == ["c", "b"]
    # a smaller k rewards the top ranks more: with k=1, a (1/2) beats d (1/4)
    assert reciprocal_rank_fusion(rankings, k=1)[-1].id == "d"


def test_rrf_ties_keep_first_seen_order_and_union_dedupes():
    assert [d.id for d in reciprocal_rank_fusion([_docs("a", "b"), _docs("b", "a")])] == ["a", "b"]
    assert [d.id for d in unique_union([_docs("a", "b"), _docs("b", "c")])] == ["a", "b", "c"]


def test_parse_queries_strips_numbering_repeats_and_the_question():
    reply = (
        f"1. Velmora founder\n- Ilsa Brandt birthplace\n\n2) velmora founder\n{QUESTION}\nQ3: Korvik province"
    )
    assert parse_queries(reply, question=QUESTION, limit=5) == [
        "Velmora founder",
        "Ilsa Brandt birthplace",
        "Korvik province",
    ]
    assert parse_queries(reply, question=QUESTION, limit=1) == ["Velmora founder"]


def test_fill_references_uses_earlier_answers():
    assert fill_references("Where was #1 born?", ["Ilsa Brandt."]) == "Where was Ilsa Brandt born?"
    assert fill_references("Capital of #2?", ["x"]) == "Capital of #2?"


def test_batched_search_returns_what_single_searches_return(loaded, make_context):
    ctx = make_context(k=3)
    queries = ["Velmora Institute founder", "Korvik harbour", "province capital"]

    # Hybrid RRF scores tie often (rank 1 dense + rank 2 sparse == rank 2 + rank 1), and Milvus
    # orders ties differently for nq=1 and nq>1, so rankings are compared with ties broken by id.
    def ranked(results):
        return [sorted((-round(d.metadata["score"], 6), d.id) for d in r) for r in results]

    assert ranked(search_many(ctx, queries)) == ranked([search(ctx, q) for q in queries])
    dense = make_context(k=3, search_mode="dense")
    assert ranked(search_many(dense, queries)) == ranked([search(dense, q) for q in queries])


def test_multi_query_searches_each_rewrite_once_in_one_hop(loaded, make_context):
    ctx = make_context(
        "1. Velmora founder\n2. Ilsa Brandt birthplace\n3. velmora founder", "Korvik [1].", k=2
    )
    out = get_graph("multi_query").invoke({"question": QUESTION}, context=ctx)
    assert _nodes(out) == ["expand", "retrieve_many", "retrieve_many", "retrieve_many", "generate"]
    assert [s["query"] for s in out["steps"][1:4]] == [QUESTION, "Velmora founder", "Ilsa Brandt birthplace"]
    searched = {i for s in out["steps"][1:4] for i in s["doc_ids"]}
    assert {d.id for d in out["documents"]} == searched
    assert out["usage"] == {
        "llm_calls": 2,
        "retrievals": 3,
        "hops": 1,
        **{k: v for k, v in out["usage"].items() if k.endswith("tokens")},
    }


def test_rag_fusion_answers_from_the_fused_top_k(loaded, make_context):
    ctx = make_context("Velmora founder\nIlsa Brandt birthplace", "Korvik [1].", k=2)
    out = get_graph("rag_fusion").invoke({"question": QUESTION}, context=ctx)
    assert _nodes(out) == ["expand"] + ["retrieve_many"] * 4 + ["generate"]
    rankings = [[Document(id=i, page_content="") for i in s["doc_ids"]] for s in out["steps"][1:4]]
    expected = [d.id for d in reciprocal_rank_fusion(rankings, k=60)]
    assert [d.id for d in out["documents"]] == expected  # the whole fused ranking, best first
    scores = [d.metadata["rrf_score"] for d in out["documents"]]  # with its scores, as the source returns
    assert scores == sorted(scores, reverse=True) and len(scores) == len(expected)
    assert len(expected) > 2  # ... of which the answer read the top k
    assert [c["chunk_id"] for c in out["citations"]] == expected[:1]
    assert out["steps"][4]["kind"] == "note" and "RRF k=60, top 2" in out["steps"][4]["text"]
    assert [part.split(":")[0] for part in out["steps"][4]["text"].split(": ", 1)[1].split(", ")] == expected[
        :2
    ]


@pytest.mark.parametrize("mode", ["passage", "question+passage"])
def test_hyde_searches_the_hypothetical_passage_or_question_and_passage(loaded, make_context, mode):
    passage = "The Velmora Institute was founded by a scientist born in a harbour town."
    ctx = make_context(passage, "Korvik [1].", k=2, **({} if mode == "passage" else {"hyde_search": mode}))
    out = get_graph("hyde").invoke({"question": QUESTION}, context=ctx)
    assert _nodes(out) == ["hypothesize", "retrieve", "generate"]
    # The sources search the passage alone (the default); the option puts the question first.
    assert out["steps"][1]["query"] == (passage if mode == "passage" else f"{QUESTION}\n{passage}")
    assert out["usage"]["retrievals"] == 1 and out["answer"] == "Korvik [1]."


def test_step_back_retrieves_for_both_questions(loaded, make_context):
    ctx = make_context("What is the history of the Velmora Institute?", "Korvik [1].", k=2)
    out = get_graph("step_back").invoke({"question": QUESTION}, context=ctx)
    assert [s.get("query") for s in out["steps"] if s["kind"] == "retrieve"] == [
        QUESTION,
        "What is the history of the Velmora Institute?",
    ]


def test_step_back_shows_two_few_shot_turns_and_answers_with_world_knowledge(loaded, make_context):
    model = recording_chat("What is the history of the Velmora Institute?", "Korvik [1].")
    out = get_graph("step_back").invoke({"question": QUESTION}, context=make_context(chat_model=model, k=2))
    asked, answered = model.seen
    assert [m.type for m in asked] == ["system", "human", "ai", "human", "ai", "human"]
    assert asked[-1].content == QUESTION
    assert (
        "what you know" in answered[0].content and "must not contradict the passages" in answered[0].content
    )
    assert out["answer"] == "Korvik [1]." and out["outcome"] == "answered"


def test_decomposition_parallel_answers_each_subquestion_then_synthesises(loaded, make_context):
    subs = "Who founded the Velmora Institute?\nWhere was Ilsa Brandt born?"
    ctx = make_context(subs, "Ilsa Brandt.", "Ilsa Brandt.", "Korvik [1].", k=2)
    out = get_graph("decomposition").invoke({"question": QUESTION}, context=ctx)
    assert _nodes(out) == [
        "decompose",
        "retrieve_many",
        "retrieve_many",
        "answer_parallel",
        "answer_parallel",
        "generate",
    ]
    assert sorted(s["query"] for s in out["steps"] if s["node"] == "answer_parallel") == sorted(
        subs.split("\n")
    )
    assert out["usage"]["llm_calls"] == 4 and out["usage"]["retrievals"] == 2 and out["usage"]["hops"] == 1


@pytest.mark.parametrize("cap", [3, 4])
def test_decomposition_asks_for_no_more_sub_questions_than_it_keeps(loaded, make_context, cap):
    subs = "\n".join(
        [
            "Who founded the Velmora Institute?",
            "Where was Ilsa Brandt born?",
            "Where is Korvik?",
            "When was it founded?",
        ]
    )
    model = recording_chat(subs, *["an answer."] * cap, "Korvik [1].")
    ctx = make_context(chat_model=model, k=1, num_queries=cap)
    out = get_graph("decomposition").invoke({"question": QUESTION}, context=ctx)
    assert f"at most {cap} short sub-questions" in model.seen[0][0].content
    assert len([s for s in out["steps"] if s["node"] == "answer_parallel"]) == cap
    dropped = "(dropped past the cap of 3: When was it founded?)"
    assert out["steps"][0]["text"].endswith(dropped) == (cap == 3)


def test_decomposition_recursive_answers_in_order(loaded, make_context):
    subs = "Who founded the Velmora Institute?\nWhere was Ilsa Brandt born?"
    ctx = make_context(subs, "Ilsa Brandt.", "Korvik.", "Korvik [1].", k=2, decomposition_mode="recursive")
    out = get_graph("decomposition").invoke({"question": QUESTION}, context=ctx)
    assert _nodes(out) == ["decompose"] + ["next_subquestion", "retrieve", "answer_in_order"] * 2 + [
        "generate"
    ]
    assert [s["text"] for s in out["steps"] if s["node"] == "answer_in_order"] == ["Ilsa Brandt.", "Korvik."]
    assert out["usage"]["retrievals"] == 2 and out["usage"]["hops"] == 2


def test_decomposition_without_subquestions_searches_the_question(loaded, make_context):
    ctx = make_context("", "unknown", "I do not know.", k=2)
    out = get_graph("decomposition").invoke({"question": QUESTION}, context=ctx)
    assert [s.get("query") for s in out["steps"] if s["kind"] == "retrieve"] == [QUESTION]
    assert out["answer"] == "I do not know."


def test_planned_fills_later_subquestions_with_earlier_answers(loaded, make_context):
    plan = "Who founded the Velmora Institute?\nWhere was #1 born?\nWhich province is #2 in?\nextra\nmore"
    ctx = make_context(plan, "Ilsa Brandt.", "Korvik.", "Asterra.", "Korvik [1].", k=2)
    out = get_graph("planned").invoke({"question": QUESTION}, context=ctx)
    queries = [s["query"] for s in out["steps"] if s["node"] == "next_subquestion"]
    # the plan is capped at num_queries (3) sub-questions; the step names what the cap dropped
    assert queries == [
        "Who founded the Velmora Institute?",
        "Where was Ilsa Brandt born?",
        "Which province is Korvik in?",
    ]
    assert out["steps"][0]["text"].endswith("(dropped past the cap of 3: extra; more)")
    assert out["answer"] == "Korvik [1]." and out["usage"]["llm_calls"] == 5


@pytest.mark.parametrize(
    "reply,kind,first_node",
    [
        ('{"kind": "multi_hop"}', "multi_hop", "first_query"),  # routed to fixed_step below
        ('{"kind": "single_hop"}', "single_hop", "retrieve"),
        ("no idea", "single_hop", "retrieve"),  # malformed: the cheap default
    ],
)
def test_auto_routes_each_kind_to_its_configured_method(loaded, make_context, reply, kind, first_node):
    method = "fixed_step" if kind == "multi_hop" else "naive"
    replies = [reply] + (["q1", "a1", "q2", "a2"] if method == "fixed_step" else []) + ["Korvik [1]."]
    ctx = make_context(*replies, k=2, routes="single_hop=naive,multi_hop=fixed_step", router="llm")
    out = get_graph("auto").invoke({"question": QUESTION}, context=ctx)
    assert out["steps"][0] == {"node": "classify", "kind": "decide", "text": f"{kind} -> {method}"}
    assert out["steps"][1]["node"] == first_node and out["answer"] == "Korvik [1]."
    assert out["usage"]["llm_calls"] == len(replies)  # the router's call is counted with the method's


def test_auto_sends_global_questions_to_rag_fusion_while_there_is_no_raptor_tree(loaded, make_context):
    ctx = make_context('{"kind": "global_summary"}', "one query", "Korvik [1].", k=2, router="llm")
    out = get_graph("auto").invoke({"question": QUESTION}, context=ctx)
    assert out["steps"][0]["text"] == (
        "global_summary -> rag_fusion (no community reports for 'test', so not graphrag; "
        "no RAPTOR tree for 'test', so not raptor)"
    )
    assert out["steps"][1]["node"] == "expand" and out["answer"] == "Korvik [1]."


def test_auto_answers_directly_without_retrieval(loaded, make_context):
    out = get_graph("auto").invoke(
        {"question": "What is 2 + 2?"}, context=make_context('{"kind": "no_retrieval"}', "4", router="llm")
    )
    assert [s["node"] for s in out["steps"]] == ["classify", "answer_directly"]
    assert out["answer"] == "4" and out.get("usage", {}).get("retrievals", 0) == 0 and out["citations"] == []


def test_auto_rejects_routes_to_unknown_methods(loaded, make_context):
    # Refused when the context is built, before any graph runs ...
    with pytest.raises(ValueError, match="RagContext.routes: multi_hop='nope' is not a method"):
        make_context('{"kind": "multi_hop"}', routes="multi_hop=nope", router="llm")
    # ... and when the mapping was changed in place afterwards, by the router when it runs.
    ctx = make_context('{"kind": "multi_hop"}', router="llm")
    ctx.routes["multi_hop"] = "nope"
    with pytest.raises(RunFailed, match="RagContext.routes: multi_hop='nope' is not a method"):
        get_graph("auto").invoke({"question": QUESTION}, context=ctx)
    with pytest.raises(ValueError, match="unknown question kind"):
        make_context(routes="weird=naive")


def test_scripted_models_answer_parallel_branches_from_many_threads():
    """Parallel ``Send`` branches call one scripted model at once: none may see "generator already
    executing" (the list iterator ``fake_chat`` uses), and every reply is handed out exactly once."""
    replies = [f"reply {i}" for i in range(400)]
    model, start = fake_chat(*replies), threading.Barrier(8)

    def draw(_: int) -> list[str]:
        start.wait()
        return [model.invoke("q").content for _ in range(50)]

    with ThreadPoolExecutor(8) as pool:
        drawn = [reply for batch in pool.map(draw, range(8)) for reply in batch]
    assert sorted(drawn) == sorted(replies)
