"""DRAG and IterDRAG: demonstrations, context order, the three markers, the iteration cap, mining."""

from __future__ import annotations

import functools
import itertools
import json

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from rag_graphs.eval.mining import mine_demonstrations
from rag_graphs.methods import get_graph
from rag_graphs.methods.iterdrag import parse_markers
from rag_graphs.text.demonstrations import format_demonstrations, load_demonstrations
from tests.conftest import recording_chat, write_jsonl

QUESTION = "In which town was the founder of the Velmora Institute born?"
DEMOS = [
    {"question": "Where was Ada born?", "answer": "Lunmar", "documents": ["Ada was born in Lunmar."]},
    {"question": "Who built the bridge?", "answer": "Osric", "documents": ["Osric built the bridge."]},
    {"question": "Third?", "answer": "third", "documents": []},
]


def _nodes(out) -> list[str]:
    return [s["node"] for s in out["steps"]]


def test_demonstrations_load_and_render_the_first_m(tmp_path):
    path = write_jsonl(tmp_path / "demos.jsonl", DEMOS)
    demos = load_demonstrations(path)
    assert [d.answer for d in demos] == ["Lunmar", "Osric", "third"]
    text = format_demonstrations(demos, 2)
    assert "Question: Where was Ada born?\nAnswer: Lunmar" in text
    assert "[1]\n<passage>\nAda was born in Lunmar.\n</passage>" in text  # documents fenced as data
    assert "Third?" not in text and format_demonstrations(demos, 0) == "(no examples)"


def test_bad_demonstrations_name_the_line_and_field(tmp_path):
    path = tmp_path / "demos.jsonl"
    path.write_text(json.dumps(DEMOS[0]) + "\n" + json.dumps({"question": "q", "documents": []}) + "\n")
    with pytest.raises(ValueError, match=r"demos.jsonl:2: field 'answer'"):
        load_demonstrations(path)
    with pytest.raises(FileNotFoundError, match="RagContext.demonstrations"):
        load_demonstrations(tmp_path / "missing.jsonl")


def test_drag_puts_demonstrations_in_the_prompt_and_the_best_document_last(loaded, make_context, tmp_path):
    model = recording_chat("Korvik [3].")
    demos = write_jsonl(tmp_path / "demos.jsonl", DEMOS)
    ctx = make_context(chat_model=model, k=3, demonstrations=str(demos), num_demos=2)
    out = get_graph("drag").invoke({"question": QUESTION}, context=ctx)
    assert _nodes(out) == ["retrieve", "arrange", "generate"]
    retrieved = out["steps"][0]["doc_ids"]
    assert out["citations"][0]["chunk_id"] == retrieved[0]  # [3] is the top hit, placed last
    prompt = "\n".join(str(m.content) for m in model.seen[0])
    assert "Where was Ada born?" in prompt and "Who built the bridge?" in prompt and "Third?" not in prompt
    assert out["usage"]["llm_calls"] == 1


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Follow up: Who founded X?", [("follow_up", "Who founded X?")]),
        (
            "Follow up: Who founded X?\nIntermediate answer: Ilsa.\nSo the final answer is: Korvik [1].",
            [("follow_up", "Who founded X?"), ("intermediate", "Ilsa."), ("final", "Korvik [1].")],
        ),
        ("so the final answer is Korvik", [("final", "Korvik")]),
        ("The final answer is: Korvik", [("final", "Korvik")]),  # SmolLM2 drops the "So"
        ("I think it is Korvik.", []),
    ],
)
def test_iterdrag_parses_its_three_markers(text, expected):
    assert parse_markers(text) == expected


def test_iterdrag_follows_up_until_the_final_answer(loaded, make_context):
    ctx = make_context(
        "Follow up: Who founded the Velmora Institute?\nIntermediate answer: (made up)",
        "Ilsa Brandt.",
        "Follow up: Where was Ilsa Brandt born?",
        "Korvik.",
        "So the final answer is: Korvik [1].",
        k=2,
    )
    out = get_graph("iterdrag").invoke({"question": QUESTION}, context=ctx)
    assert _nodes(out) == ["retrieve", "iterate"] + ["follow_up", "intermediate", "iterate"] * 2
    assert [s["query"] for s in out["steps"] if s["kind"] == "retrieve"] == [
        QUESTION,
        "Who founded the Velmora Institute?",
        "Where was Ilsa Brandt born?",
    ]
    assert (
        out["answer"] == "Korvik [1]." and out["usage"]["retrievals"] == 3 and out["usage"]["llm_calls"] == 5
    )


def test_iterdrag_with_an_immediate_final_answer_is_drag(loaded, make_context):
    out = get_graph("iterdrag").invoke(
        {"question": QUESTION}, context=make_context("So the final answer is: Korvik [1].", k=2)
    )
    assert _nodes(out) == ["retrieve", "iterate"] and out["usage"]["llm_calls"] == 1
    assert (out["outcome"], out["stop_reason"]) == ("answered", "enough")


def test_iterdrag_iteration_cap_and_missing_markers_end_with_an_answer(loaded, make_context):
    endless = GenericFakeChatModel(
        messages=map(lambda i: AIMessage(content=f"Follow up: question number {i}?"), itertools.count())
    )
    ctx = make_context(chat_model=endless, k=1, iterdrag_iterations=2)
    out = get_graph("iterdrag").invoke({"question": QUESTION}, context=ctx)
    assert out["usage"]["retrievals"] == 3  # the question + 2 follow-ups
    assert "follow-up budget reached (2 follow-ups)" in out["steps"][-2]["text"]
    assert out["outcome"] == "budget_exhausted" and "unable to answer within the step budget" in out["answer"]
    out = get_graph("iterdrag").invoke(
        {"question": QUESTION}, context=make_context("Korvik, I think.", "Korvik.")
    )
    assert _nodes(out) == ["retrieve", "iterate", "generate", "generate"] and out["answer"] == "Korvik."


def test_mining_keeps_only_correctly_answered_questions(tiny, make_context, tmp_path):
    always_korvik = GenericFakeChatModel(messages=itertools.cycle([AIMessage(content="Korvik [1].")]))
    out = tmp_path / "demos.jsonl"
    kept = mine_demonstrations(
        tiny,
        out,
        context=make_context(chat_model=always_korvik, k=2),
        eval_store=str(tmp_path / "e.db"),
        progress=False,
    )
    demos = load_demonstrations(out)
    assert kept == 1 and [d.question for d in demos] == ["Where was Ilsa Brandt born?"]
    assert demos[0].answer == "Korvik" and len(demos[0].documents) == 2


def test_iterdrag_shows_documents_most_relevant_last_and_asks_for_intermediate_answers(loaded, make_context):
    model = recording_chat(
        "Follow up: Who founded the Velmora Institute?", "Ilsa Brandt.", "So the final answer is: Korvik [3]."
    )
    out = get_graph("iterdrag").invoke({"question": QUESTION}, context=make_context(chat_model=model, k=3))
    first = out["steps"][0]["doc_ids"]
    step_prompt = str(model.seen[0][-1].content)
    text = {d.id: d.page_content for d in out["documents"]}
    positions = [step_prompt.index(text[i]) for i in first]  # the first search's ranking, best first
    assert len(positions) == 3 and positions == sorted(positions, reverse=True)  # best hit shown last
    assert str(model.seen[1][-1].content).rstrip().endswith("Intermediate answer:")
    assert "Follow up: Who founded the Velmora Institute?" in str(model.seen[1][-1].content)
    # the final step numbers the passages it was shown, most relevant last: [3] is the third of those
    assert out["citations"][0]["chunk_id"] == out["documents"][::-1][2].id


@pytest.mark.parametrize("reply", ["No follow-up needed.", "No further follow-up questions are needed"])
def test_iterdrag_no_follow_up_needed_answers_from_what_was_gathered(loaded, make_context, reply):
    out = get_graph("iterdrag").invoke({"question": QUESTION}, context=make_context(reply, "Korvik [1]."))
    assert _nodes(out)[:3] == ["retrieve", "iterate", "generate"] and "follow_up" not in _nodes(out)
    assert out["stop_reason"] == "no follow-up needed" and out["answer"] == "Korvik [1]."


CHAIN_DEMO = {
    "question": "Where was the founder of the Velmora Institute born?",
    "answer": "Korvik",
    "documents": ["Korvik is a harbour town.", "Ilsa Brandt founded the Velmora Institute."],
    "chain": [
        {"follow_up": "Who founded the Velmora Institute?", "intermediate_answer": "Ilsa Brandt"},
        {"follow_up": "Where was Ilsa Brandt born?", "intermediate_answer": "Korvik"},
    ],
}


def test_iterdrag_demonstrations_show_their_chain_and_drag_ones_only_the_answer(tmp_path):
    demos = load_demonstrations(write_jsonl(tmp_path / "demos.jsonl", [CHAIN_DEMO, DEMOS[0]]))
    chains = format_demonstrations(demos, 2, chains=True)
    assert (
        "Question: Where was the founder of the Velmora Institute born?\n"
        "Follow up: Who founded the Velmora Institute?\nIntermediate answer: Ilsa Brandt\n"
        "Follow up: Where was Ilsa Brandt born?\nIntermediate answer: Korvik\n"
        "So the final answer is: Korvik"
    ) in chains
    assert "Question: Where was Ada born?\nSo the final answer is: Lunmar" in chains  # no chain: answer only
    plain = format_demonstrations(demos, 1)
    assert "Follow up" not in plain and plain.endswith("Answer: Korvik")
    # a demonstration's documents are shown as the real context is: most relevant (first) last
    assert plain.index("Ilsa Brandt founded") < plain.index("Korvik is a harbour town")


def test_a_malformed_chain_names_the_line_and_field(tmp_path):
    bad = {**CHAIN_DEMO, "chain": [{"follow_up": "Who?"}]}
    with pytest.raises(ValueError, match=r"demos.jsonl:2: field 'chain'"):
        load_demonstrations(write_jsonl(tmp_path / "demos.jsonl", [CHAIN_DEMO, bad]))


def test_builtin_demonstrations_are_the_default_and_each_has_documents_and_a_chain(make_context):
    from rag_graphs.config.context import RagContext
    from rag_graphs.text.demonstrations import BUILTIN_PATH

    assert RagContext().demonstrations == "builtin" and BUILTIN_PATH.is_file()
    demos = load_demonstrations("builtin")
    assert len(demos) >= 4
    assert all(d.documents and len(d.chain) >= 2 and d.chain[-1][1] == d.answer for d in demos)
    assert all("#" not in q for d in demos for q, _ in d.chain)  # references to earlier answers filled in


def test_iterdrag_prompt_shows_chain_demonstrations_and_its_own_follow_ups_in_the_same_form(
    loaded, make_context
):
    model = recording_chat(
        "Follow up: Who founded the Velmora Institute?", "Ilsa Brandt.", "So the final answer is: Korvik [1]."
    )
    ctx = make_context(chat_model=model, k=2, num_demos=1)  # demonstrations: builtin (default)
    get_graph("iterdrag").invoke({"question": QUESTION}, context=ctx)
    first = "\n".join(str(m.content) for m in model.seen[0])
    (demo,) = load_demonstrations("builtin")[:1]
    assert f"Follow up: {demo.chain[0][0]}\nIntermediate answer: {demo.chain[0][1]}" in first
    last = str(model.seen[2][-1].content)
    assert last.rstrip().endswith(
        "Follow up: Who founded the Velmora Institute?\nIntermediate answer: Ilsa Brandt.\n\n"
        'Start your reply with "Follow up:" or "So the final answer is:".'
    )


def test_drag_with_demonstrations_none_shows_no_examples(loaded, make_context):
    model = recording_chat("Korvik [1].")
    out = get_graph("drag").invoke(
        {"question": QUESTION}, context=make_context(chat_model=model, demonstrations="none")
    )
    assert "(no examples)" in str(model.seen[0][0].content)
    assert out["steps"][1]["text"].endswith("0 demonstrations")


def test_dataset_decomposition_becomes_a_chain_with_references_filled_in(tmp_path):
    from rag_graphs.eval.datasets import load_dataset

    rows = [
        {
            "question": "Where was the founder of V born?",
            "answer": "Korvik",
            "decomposition": [
                {"question": "Who founded V?", "answer": "Ilsa"},
                {"question": "Where was #1 born?", "answer": "Korvik"},
            ],
        },
        {"question": "q2", "answer": "a", "decomposition": [{"question": "V >> founder", "answer": "Ilsa"}]},
    ]
    ds = load_dataset(write_jsonl(tmp_path / "qs.jsonl", rows))
    assert ds.examples[0].chain == (("Who founded V?", "Ilsa"), ("Where was Ilsa born?", "Korvik"))
    assert ds.examples[1].chain == ()  # a knowledge-base relation is not a follow-up question
    with pytest.raises(ValueError, match=r"qs.jsonl:1: field 'decomposition'"):
        load_dataset(write_jsonl(tmp_path / "qs.jsonl", [{**rows[0], "decomposition": [{"q": 1}]}]))


def test_mining_by_evidence_keeps_questions_whose_documents_hold_every_gold_passage(
    tiny, make_context, tmp_path
):
    never_right = GenericFakeChatModel(messages=itertools.cycle([AIMessage(content="I do not know.")]))
    out = tmp_path / "demos.jsonl"
    ctx = make_context(chat_model=never_right, k=9)  # the whole corpus: every gold passage is found
    mine = functools.partial(mine_demonstrations, tiny, out, context=ctx, eval_store=str(tmp_path / "e.db"))
    assert mine(progress=False) == 0  # the model never answers right
    assert mine(progress=False, require="evidence", max_documents=9) == 3
    assert [d.answer for d in load_demonstrations(out)] == ["Korvik", "Lunmar", "Velm"]
    # two gold passages per question cannot both be in a demonstration that keeps one document
    assert mine(progress=False, require="evidence", max_documents=1) == 0
    with pytest.raises(ValueError, match="require"):
        mine(progress=False, require="vibes")
