"""LLM-as-judge evaluators: answer correctness, groundedness in the cited passages, citation precision.

EM and F1 score words: a copied passage can score EM 1 and a correct sentence EM 0. A judge
model reads meaning. Every judge here is an evaluator function in the shape LangSmith's
``evaluate`` and openevals share, ``judge(*, inputs, outputs, reference_outputs)`` returning
``{"key", "score", "comment"}``, so the two ecosystems' evaluators run beside ours
(``evaluate(..., options=EvalOptions(evaluators=[...]))``) and ours run in theirs. What an evaluator reads:

- ``inputs``: ``{"question"}``;
- ``outputs``: ``{"answer", "citations", "passages"}``, where ``passages`` maps each cited
  chunk id to the text the answer's prompt showed (``run_outputs``);
- ``reference_outputs``: ``{"answers"}``, the gold answer and its aliases (or LangSmith
  datasets' ``{"answer", "answer_aliases"}``, ``rag_graphs.eval.langsmith.reference_outputs``).

Judges ask through ``invoke_structured`` (a JSON grammar on llama.cpp, native structured output
where the model has it, a lenient parser elsewhere). A verdict that cannot be parsed scores
None, unjudged and left out of the mean with the reason in ``comment``: never a pass.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from rag_graphs.llm.structured import invoke_structured
from rag_graphs.methods.self_rag import Grounded
from rag_graphs.prompts import load_prompt
from rag_graphs.prompts.fencing import fence
from rag_graphs.text.citations import numbered_passage

log = logging.getLogger(__name__)

Evaluator = Callable[..., Any]
"""``(*, inputs, outputs, reference_outputs) -> {"key", "score", "comment"}`` (LangSmith, openevals)."""

JUDGE_TOKENS = 96
"""Reply budget of a judge model: a verdict is a one-field JSON object."""

CITATIONS_JUDGED = 8
"""Citations checked per answer at most (one judge call each)."""

_CORRECT = load_prompt("judge_correctness")
_GROUNDED = load_prompt("judge_grounded")
_SUPPORTS = load_prompt("judge_citation")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class Correct(BaseModel):
    """Whether the answer states a reference answer."""

    correct: bool = Field(description="the answer states a reference answer and contradicts none")


class Supports(BaseModel):
    """Whether one passage backs a claim."""

    supports: bool = Field(description="the passage states at least one fact of the claim")


def run_outputs(out: Mapping[str, Any]) -> dict[str, Any]:
    """What judges read of a run's result: its answer, citations, and each cited chunk's text
    as the run saw it (from ``documents``; a citation's stored quote when the chunk is not there)."""
    texts = {str(d.id): d.page_content for d in out.get("documents", [])}
    citations = list(out.get("citations", []))
    passages = {str(c["chunk_id"]): texts.get(str(c["chunk_id"]), c.get("quote", "")) for c in citations}
    return {"answer": str(out.get("answer", "")), "citations": citations, "passages": passages}


def _verdict(key: str, value: bool | None, comment: str) -> dict[str, Any]:
    return {"key": key, "score": None if value is None else float(value), "comment": comment}


def _ask(
    judge: BaseChatModel, prompt: Any, schema: type[BaseModel], field: str, **values: str
) -> bool | None:
    """The judge's yes/no under ``schema``; None when its reply could not be parsed."""
    default = schema.model_validate({field: False})
    result = invoke_structured(judge, prompt.format_messages(**values), schema, default)
    return None if result.method == "default" else bool(getattr(result.value, field))


def correctness(judge: BaseChatModel) -> Evaluator:
    """``answer_correct``: the answer states one of the reference answers (1.0) or not (0.0)."""

    def answer_correct(*, inputs: dict, outputs: dict, reference_outputs: dict, **_: Any) -> dict[str, Any]:
        answer = str(outputs.get("answer", "")).strip()
        if not answer:
            return _verdict("answer_correct", False, "no answer")
        golds = " | ".join(golds_of(reference_outputs))
        value = _ask(
            judge,
            _CORRECT,
            Correct,
            "correct",
            question=inputs["question"],
            reference=golds,
            answer=fence(answer),
        )
        return _verdict("answer_correct", value, "" if value is not None else "unparseable verdict")

    return answer_correct


def golds_of(reference: Mapping[str, Any]) -> list[str]:
    """The accepted answers in either reference shape (the evaluator's or a LangSmith dataset's)."""
    if "answers" in reference:
        return [str(a) for a in reference["answers"]]
    return [str(a) for a in [reference.get("answer", ""), *reference.get("answer_aliases", [])] if a]


def _cited(outputs: dict) -> list[tuple[int, str, str]]:
    """(marker, chunk id, text) of each citation whose passage is known, in answer order."""
    passages = outputs.get("passages", {})
    return [
        (int(c["marker"]), str(c["chunk_id"]), passages[str(c["chunk_id"])])
        for c in outputs.get("citations", [])
        if str(c["chunk_id"]) in passages
    ]


def groundedness(judge: BaseChatModel) -> Evaluator:
    """``grounded``: every fact of the answer is stated in the passages it cites (Self-RAG's check
    on the cited passages only). An answer that cites nothing is not grounded.

    The answer is fenced as data like the passages (``judge_grounded``): it may repeat a
    document's note to the grader ("this answer is supported"), and a judge that read it as an
    instruction would pass an unsupported answer."""

    def grounded(*, outputs: dict, **_: Any) -> dict[str, Any]:
        answer = str(outputs.get("answer", "")).strip()
        if not answer:
            return _verdict("grounded", None, "no answer")
        cited = _cited(outputs)
        if not cited:
            return _verdict("grounded", False, "cites no passage")
        context = "\n\n".join(numbered_passage(m, Document(page_content=text)) for m, _, text in cited)
        value = _ask(judge, _GROUNDED, Grounded, "grounded", context=context, answer=fence(answer))
        return _verdict("grounded", value, "" if value is not None else "unparseable verdict")

    return grounded


def claim_for(answer: str, marker: int, explicit: bool) -> str:
    """The sentences of ``answer`` that cite ``[marker]`` (the whole answer for a citation the
    model did not write: every shown passage is then cited for all of it)."""
    if not explicit:
        return answer
    tag = re.compile(rf"\[(?:\d+\s*,\s*)*{marker}(?:\s*,\s*\d+)*\]")
    sentences = [s for s in _SENTENCE.split(answer) if tag.search(s)]
    return " ".join(sentences) or answer


def citation_precision(judge: BaseChatModel) -> Evaluator:
    """``citation_precision``: the share of the answer's citations whose passage supports the
    sentence citing it (ALCE's precision, one judge call per citation, at most ``CITATIONS_JUDGED``).
    None when there is nothing to check or no verdict could be parsed."""

    def citation_precision(*, outputs: dict, **_: Any) -> dict[str, Any]:
        answer = str(outputs.get("answer", ""))
        explicit = {str(c["chunk_id"]): bool(c.get("explicit", True)) for c in outputs.get("citations", [])}
        verdicts = [
            _ask(
                judge,
                _SUPPORTS,
                Supports,
                "supports",
                claim=fence(claim_for(answer, marker, explicit[chunk])),
                passage=fence(text),
            )
            for marker, chunk, text in _cited(outputs)[:CITATIONS_JUDGED]
        ]
        parsed = [v for v in verdicts if v is not None]
        if not parsed:
            return _verdict(
                "citation_precision", None, "no citation to check" if not verdicts else "unparseable"
            )
        score = sum(parsed) / len(parsed)
        return {
            "key": "citation_precision",
            "score": score,
            "comment": f"{sum(parsed)}/{len(parsed)} supported",
        }

    return citation_precision


def default_judges(judge: BaseChatModel) -> list[Evaluator]:
    """The three judges ``rag-graphs eval --judge`` adds, all on one judge model."""
    return [correctness(judge), groundedness(judge), citation_precision(judge)]


def _results(value: Any) -> Iterable[tuple[str, Any]]:
    """(key, score) pairs of whatever an evaluator returned: a dict, a list of dicts (openevals'
    multi-score judges), LangSmith's ``EvaluationResult`` / ``EvaluationResults``."""
    if isinstance(value, list):
        for item in value:
            yield from _results(item)
    elif isinstance(value, Mapping) and "results" in value:
        yield from _results(list(value["results"]))
    elif isinstance(value, Mapping):
        yield str(value["key"]), value.get("score")
    elif hasattr(value, "key"):
        yield str(value.key), getattr(value, "score", None)
    else:
        raise TypeError(
            f"an evaluator returned {type(value).__name__}: expected a dict with 'key' and 'score'"
        )


def _number(score: Any) -> float | None:
    if score is None or isinstance(score, bool | int | float):
        return None if score is None else float(score)
    raise TypeError(f"score {score!r}: expected a number or a bool")


def judge_run(
    evaluators: Sequence[Evaluator], question: str, golds: Sequence[str], out: Mapping[str, Any]
) -> dict[str, float | None]:
    """Every evaluator's score for one run, by key. An evaluator that fails scores None and is
    logged: one judge error never sinks an evaluation (its row says what was not judged)."""
    inputs, outputs = {"question": question}, run_outputs(out)
    reference = {"answers": list(golds)}
    scores: dict[str, float | None] = {}
    for evaluator in evaluators:
        name = getattr(evaluator, "__name__", type(evaluator).__name__)
        try:
            for key, score in _results(
                evaluator(inputs=inputs, outputs=outputs, reference_outputs=reference)
            ):
                scores[key] = _number(score)
        except Exception as exc:  # a user's evaluator or a judge model may fail: recorded, not raised
            log.warning("evaluator %s failed: %s: %s", name, type(exc).__name__, exc)
            scores[name] = None
    return scores
