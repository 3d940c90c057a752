"""LLM-as-judge evaluators on scripted judge models: what each judge is shown, how verdicts
score, and that a verdict that cannot be parsed never counts as a pass."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from rag_graphs.eval.judges import (
    citation_precision,
    claim_for,
    correctness,
    default_judges,
    golds_of,
    groundedness,
    judge_run,
    run_outputs,
)
from rag_graphs.text.citations import extract_citations

KORVIK = Document(id="c1", page_content="Ilsa Brandt was born in Korvik.", metadata={"source": "a.md"})
TIDE = Document(id="c2", page_content="The tide mill stands in Halden.", metadata={"source": "b.md"})


class Judge(BaseChatModel):
    """Replies by a rule over the human message (``rule``); keeps every prompt it saw."""

    rule: Any
    seen: list = []

    @property
    def _llm_type(self) -> str:
        return "scripted-judge"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        text = str(messages[-1].content)
        self.seen.append((str(messages[0].content), text))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.rule(text)))])


def _run(answer: str, docs: list[Document]) -> dict:
    return {"answer": answer, "documents": docs, "citations": extract_citations(answer, docs)}


def test_correctness_reads_meaning_through_the_judge_and_is_shown_the_golds():
    judge = Judge(
        rule=lambda text: '{"correct": true}' if "Korvik" in text else '{"correct": false}', seen=[]
    )
    evaluator = correctness(judge)
    out = run_outputs(_run("She was born in the town of Korvik [1].", [KORVIK]))
    result = evaluator(inputs={"question": "Where?"}, outputs=out, reference_outputs={"answers": ["Korvik"]})
    assert result == {"key": "answer_correct", "score": 1.0, "comment": ""}
    _, shown = judge.seen[-1]
    assert "Reference answers: Korvik" in shown and "<passage>\nShe was born" in shown  # the answer is data
    wrong = evaluator(
        inputs={"question": "Where?"}, outputs={"answer": "Halden."}, reference_outputs={"answers": ["Oslo"]}
    )
    assert wrong["score"] == 0.0


def test_an_unparseable_verdict_is_unjudged_never_a_pass():
    judge = Judge(rule=lambda text: "I think it is probably fine", seen=[])
    out = run_outputs(_run("Korvik [1].", [KORVIK]))
    scores = judge_run(default_judges(judge), "Where?", ["Korvik"], _run("Korvik [1].", [KORVIK]))
    assert scores == {"answer_correct": None, "grounded": None, "citation_precision": None}
    assert groundedness(judge)(outputs=out)["comment"] == "unparseable verdict"


def test_groundedness_shows_only_the_cited_passages_under_their_markers():
    judge = Judge(rule=lambda text: '{"grounded": true}', seen=[])
    out = run_outputs(_run("Korvik [2].", [TIDE, KORVIK]))
    assert groundedness(judge)(outputs=out)["score"] == 1.0
    _, shown = judge.seen[-1]
    assert "[2]\n<passage>" in shown and "Korvik." in shown and "tide mill" not in shown


def test_an_answer_citing_nothing_is_not_grounded_and_an_empty_one_is_not_judged():
    judge = Judge(rule=lambda text: '{"grounded": true}', seen=[])
    assert groundedness(judge)(outputs={"answer": "Korvik.", "citations": [], "passages": {}})["score"] == 0.0
    assert groundedness(judge)(outputs={"answer": " ", "citations": [], "passages": {}})["score"] is None
    assert judge.seen == []  # neither needed the judge


def _supports_when_the_passage_place_is_claimed(text: str) -> str:
    claim, passage = text.split("Passage:")
    place = "Korvik" if "Korvik" in passage else "Halden"
    return json.dumps({"supports": place in claim})


def test_citation_precision_checks_each_citation_against_the_sentence_citing_it():
    judge = Judge(rule=_supports_when_the_passage_place_is_claimed, seen=[])
    run = _run("Ilsa was born in Korvik [1]. The mill is in Oslo [1][2].", [KORVIK, TIDE])
    result = citation_precision(judge)(outputs=run_outputs(run))
    # [1] backs the Korvik sentence; [2] (Halden) is cited only for "the mill is in Oslo"
    assert result["score"] == 0.5 and result["comment"] == "1/2 supported" and len(judge.seen) == 2
    claims = [text.split("Passage:")[0] for _, text in judge.seen]
    assert "Ilsa was born in Korvik [1]. The mill is in Oslo [1][2]." in claims[0]  # both sentences cite [1]
    assert "Korvik" not in claims[1] and "Oslo [1][2]." in claims[1]  # [2]: only the sentence citing it


def test_claims_for_citations_the_model_did_not_write_are_the_whole_answer():
    assert claim_for("A [1]. B [2]. C [1, 3].", 1, explicit=True) == "A [1]. C [1, 3]."
    assert claim_for("A. B.", 1, explicit=False) == "A. B."


def test_user_evaluators_in_the_langsmith_and_openevals_shapes_plug_in_beside_the_judges():
    from langsmith.evaluation import EvaluationResult

    def brevity(*, outputs: dict, **_: Any) -> dict:
        return {"key": "brief", "score": len(outputs["answer"]) < 20}

    def two_scores(*, inputs: dict, **_: Any) -> list[dict]:  # openevals' multi-score judges
        return [{"key": "a", "score": 0.25}, {"key": "b", "score": None}]

    def langsmith_style(*, reference_outputs: dict, **_: Any) -> EvaluationResult:
        return EvaluationResult(key="golds", score=len(reference_outputs["answers"]))

    def broken(**_: Any) -> dict:
        raise RuntimeError("judge server down")

    scores = judge_run(
        [brevity, two_scores, langsmith_style, broken],
        "Where?",
        ["Korvik", "K."],
        _run("Korvik [1].", [KORVIK]),
    )
    assert scores == {"brief": 1.0, "a": 0.25, "b": None, "golds": 2.0, "broken": None}


def test_an_openevals_evaluator_runs_as_a_judge():
    exact = pytest.importorskip("openevals.exact").exact_match
    # openevals compares outputs with reference_outputs whole: the run's outputs are not a gold
    scores = judge_run([exact], "Where?", ["Korvik"], _run("Korvik [1].", [KORVIK]))
    assert scores == {"exact_match": 0.0}


def test_a_score_that_is_not_a_number_is_refused_with_its_value():
    scores = judge_run([lambda **_: {"key": "x", "score": "great"}], "q", ["a"], _run("a", []))
    assert scores == {"<lambda>": None}


def test_golds_are_read_from_either_reference_shape():
    assert golds_of({"answers": ["Korvik", "K."]}) == ["Korvik", "K."]
    assert golds_of({"answer": "Korvik", "answer_aliases": ["K."]}) == ["Korvik", "K."]  # LangSmith's
