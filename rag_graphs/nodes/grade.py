"""The shared ``grade`` node: judge each retrieved passage, keep the useful ones.

One structured call per passage, all of them in one batch
(``RagContext.max_concurrency`` at a time), so a malformed reply costs one
passage its grade (it gets the schema's safe default and is kept), never the run.
The schema is the method's: CRAG's three-way ``Grade`` (correct / ambiguous /
incorrect, the paper's evaluator labels) or Self-RAG's 0-10 ``RelevanceScore``
against ``RagContext.relevance_threshold``. Each maps to a ``Label``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from rag_graphs.config.context import RagContext
from rag_graphs.llm.calls import Batch, Body
from rag_graphs.llm.structured import structured
from rag_graphs.nodes.chat import calls_usage, chat_model
from rag_graphs.nodes.events import emit, step
from rag_graphs.nodes.inputs import latest_documents
from rag_graphs.nodes.loop import hop_budget, loop_stop, stop_update
from rag_graphs.nodes.model_node import ModelNode
from rag_graphs.prompts import load_prompt
from rag_graphs.prompts.fencing import fence
from rag_graphs.state import RagState, Usage, add_usage

Label = Literal["correct", "ambiguous", "incorrect"]


class Grade(BaseModel):
    """How useful one passage is for the question."""

    relevance: Label

    def label(self, ctx: RagContext) -> Label:
        return self.relevance

    def shown(self) -> str:
        return self.relevance

    @classmethod
    def default(cls, ctx: RagContext) -> Grade:
        """Unparseable: ambiguous, so the passage is kept and the loop cannot spin on it."""
        return cls(relevance="ambiguous")


class RelevanceScore(BaseModel):
    """How relevant one passage is to the question, 0 (unrelated) to 10 (answers it)."""

    score: int = Field(ge=0, le=10, description="0 = unrelated, 10 = contains the answer")

    def label(self, ctx: RagContext) -> Label:
        return "correct" if self.score >= ctx.relevance_threshold else "incorrect"

    def shown(self) -> str:
        return f"{self.score}/10"

    @classmethod
    def default(cls, ctx: RagContext) -> RelevanceScore:
        """Unparseable: the threshold itself, so the passage is kept (the paper's safe side)."""
        return cls(score=ctx.relevance_threshold)


def make_grade(prompt: str = "grade_correctness", schema: type[Grade | RelevanceScore] = Grade) -> ModelNode:
    """Build a node that grades the latest retrieval's passages with template ``prompt``
    and ``schema``.

    Keeps passages not labelled incorrect (with all earlier kept ones) in
    ``evidence``; sets ``found_correct`` when one is correct, and
    ``stop_kind`` and ``stop_reason`` when none is and the loop must stop (hop budget spent, or
    the last search repeated an earlier one).
    """
    template = load_prompt(prompt)

    def grade(state: RagState, ctx: RagContext) -> Body[dict]:
        model, docs = chat_model(ctx), latest_documents(state)
        calls = [
            structured(
                model,
                template.format_messages(question=state["question"], passage=fence(doc.page_content)),
                schema,
                schema.default(ctx),
            )
            for doc in docs
        ]
        outs = yield Batch(calls, max_concurrency=ctx.max_concurrency)
        verdicts = [(doc, out.value) for doc, out in zip(docs, outs, strict=True)]
        grades = [(doc, v.label(ctx)) for doc, v in verdicts]
        kept = list(state.get("evidence") or [])
        kept += [d for d, g in grades if g != "incorrect" and d.id not in {k.id for k in kept}]
        correct = any(g == "correct" for _, g in grades)
        budget = hop_budget(state, ctx.max_hops)
        stop = loop_stop(state, budget, done=correct)
        if stop and not correct:
            stop = stop.noted(" without a correct passage")
        text = ", ".join(f"{d.id}: {v.shown()}" for d, v in verdicts) or "nothing new to grade"
        emit("end", grades={str(d.id): v.shown() for d, v in verdicts})
        used: Usage = {}
        for out in outs:
            used = add_usage(used, calls_usage(out.calls))
        return {
            "evidence": kept,
            "found_correct": correct,
            **stop_update(stop),
            "steps": [step("grade", doc_ids=[str(d.id) for d, _ in grades], text=text)],
            "usage": used,
        }

    return ModelNode(grade, "grade")


grade = make_grade()
