"""Answer text: scaffolding is detected and cut, and the short answer is what EM/F1 score."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from rag_graphs.eval.metrics import answer_scores
from rag_graphs.text.answers import ANSWER_STOPS, UNKNOWN, clean_answer, scaffolding, short_answer

# The answer the issue quotes: the model ran on into a fence tag and the prompt's next turn.
RAN_ON = "Ilsa Brandt was born in Korvik [2], where she studied engineering. </passage> Question: Where did"


@pytest.mark.parametrize(
    ("answer", "found"),
    [
        (RAN_ON, "</passage>"),
        ("Korvik [1].\nQuestion: Where did she grow up?\nAnswer: Lunmar", "Question:"),
        ("Korvik.\n\nPassages:\n[1] (korvik.txt)", "Passages:"),
        ("Korvik <|im_end|>", "<|im_end|>"),
        ("Korvik.\n[human]\nQuestion: x", "[human]"),
        # The prompt repeated: a line of one of our system prompts.
        ("Korvik. You answer questions using only the numbered passages the user gives you.", "You answer"),
    ],
)
def test_scaffolding_is_found_and_cut(answer, found):
    assert scaffolding(answer).startswith(found)
    cleaned = clean_answer(answer)
    assert cleaned.startswith("Ilsa Brandt was born in Korvik") or cleaned.startswith("Korvik")
    assert scaffolding(cleaned) is None


@pytest.mark.parametrize(
    "answer",
    [
        "Korvik\n\nIlsa Brandt, who founded the Velmora Institute, was born in Korvik [1][2].",
        "Answer: Korvik",  # a leading label is the model's way of starting, not scaffolding
        "The question is hard: the passages do not say where she was born.",
        "The answer is in passage 2: Korvik.",
    ],
)
def test_clean_answers_are_left_alone(answer):
    assert scaffolding(answer) is None
    assert clean_answer(answer) == answer.removeprefix("Answer: ")


def test_an_answer_that_is_only_scaffolding_becomes_unknown():
    assert clean_answer("</passage>\nQuestion: Where was Ilsa Brandt born?\nAnswer:") == UNKNOWN


def test_stop_sequences_fit_openai_limit_and_are_detected():
    assert len(ANSWER_STOPS) <= 4  # OpenAI-compatible servers accept at most four
    assert all(scaffolding(f"Korvik{stop} x") for stop in ANSWER_STOPS)


@pytest.mark.parametrize(
    ("answer", "short"),
    [
        ("Korvik\n\nShe was born in Korvik [2].", "Korvik"),
        ("Answer: Lunmar [3].\nThe capital of Ostrava is Lunmar [3].", "Lunmar"),
        ("She was born in Korvik [1].", "She was born in Korvik"),  # no short line: the sentence
        (RAN_ON, "Ilsa Brandt was born in Korvik, where she studied engineering"),
        ("", ""),
    ],
)
def test_short_answer_is_the_first_line_without_label_or_citations(answer, short):
    assert short_answer(answer) == (short or short_answer(UNKNOWN))


def test_em_and_f1_score_the_short_answer_contains_reads_all():
    scores = answer_scores("Korvik\n\nIlsa Brandt was born in Korvik, in Ostrava [1].", ["Korvik"])
    assert scores == {"short": "Korvik", "em": 1.0, "f1": 1.0, "contains": 1.0}
    chatty = answer_scores("She was born in the town of Korvik [1].", ["Korvik"])
    assert chatty["em"] == 0.0 and 0 < chatty["f1"] < 1 and chatty["contains"] == 1.0


class StopRecording(GenericFakeChatModel):
    """A scripted chat model that keeps the stop sequences of every call."""

    stops: list = []

    def _generate(self, messages, stop=None, *args, **kwargs):
        self.stops.append(stop)
        return super()._generate(messages, stop, *args, **kwargs)


def test_generate_sends_the_stop_sequences_and_cleans_the_reply(loaded, make_context):
    from rag_graphs.methods import get_graph

    model = StopRecording(messages=iter([AIMessage(content=f"Korvik\n\n{RAN_ON}")]), stops=[])
    out = get_graph("naive").invoke(
        {"question": "Where was Ilsa Brandt born?"}, context=make_context(chat_model=model)
    )
    assert model.stops == [ANSWER_STOPS]
    assert out["answer"].startswith("Korvik\n\nIlsa Brandt was born in Korvik [2]")
    assert scaffolding(out["answer"]) is None


def test_react_final_answer_gets_the_same_cut(loaded, make_context):
    from rag_graphs.methods import get_graph

    ctx = make_context(
        "Thought: who founded it?\nAction: search[Velmora Institute founder]",
        f"Thought: enough\nFinal Answer: {RAN_ON}",
        tool_calling="text",
    )
    out = get_graph("react").invoke({"question": "Where was Ilsa Brandt born?"}, context=ctx)
    assert out["answer"].startswith("Ilsa Brandt was born in Korvik [2]")
    assert scaffolding(out["answer"]) is None
