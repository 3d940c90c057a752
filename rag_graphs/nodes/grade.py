"""The shared ``grade`` node: judge each retrieved passage, keep the useful ones.

One structured call per passage (``Grade``), all of them in one batch
(``RagContext.max_concurrency`` at a time), so a malformed reply costs one
passage its grade (it defaults to ``ambiguous`` and is kept), never the run.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from prompts import load_prompt
from prompts.fencing import fence
from rag_graphs.calls import Batch, Body
from rag_graphs.context import RagContext
from rag_graphs.nodes.common import ModelNode, calls_usage, chat_model, emit, latest_documents, step
from rag_graphs.nodes.loop import hop_budget, loop_stop
from rag_graphs.state import RagState, Usage, add_usage
from rag_graphs.structured import structured


class Grade(BaseModel):
    """How useful one passage is for the question."""

    relevance: Literal["correct", "ambiguous", "incorrect"]


def make_grade(prompt: str = "grade_correctness") -> ModelNode:
    """Build a node that grades the latest retrieval's passages with template ``prompt``.

    Keeps correct and ambiguous passages (with all earlier kept ones) in
    ``evidence``; sets ``found_correct`` when one is correct, and
    ``stop_reason`` when none is and the loop must stop (hop budget spent, or
    the last search repeated an earlier one).
    """
    template = load_prompt(prompt)

    def grade(state: RagState, ctx: RagContext) -> Body[dict]:
        model, docs = chat_model(ctx), latest_documents(state)
        calls = [
            structured(
                model,
                template.format_messages(question=state["question"], passage=fence(doc.page_content)),
                Grade,
                Grade(relevance="ambiguous"),
            )
            for doc in docs
        ]
        outs = yield Batch(calls, max_concurrency=ctx.max_concurrency)
        grades = [(doc, out.value.relevance) for doc, out in zip(docs, outs, strict=True)]
        kept = list(state.get("evidence") or [])
        kept += [d for d, g in grades if g != "incorrect" and d.id not in {k.id for k in kept}]
        correct = any(g == "correct" for _, g in grades)
        reason = loop_stop(state, hop_budget(state, ctx.max_hops), done=correct)
        if reason and not correct:
            reason += " without a correct passage"
        text = ", ".join(f"{d.id}: {g}" for d, g in grades) or "nothing new to grade"
        emit("end", grades={str(d.id): g for d, g in grades})
        used: Usage = {}
        for out in outs:
            used = add_usage(used, calls_usage(out.calls))
        return {
            "evidence": kept,
            "found_correct": correct,
            "stop_reason": reason,
            "steps": [step("grade", doc_ids=[str(d.id) for d, _ in grades], text=text)],
            "usage": used,
        }

    return ModelNode(grade, "grade")


grade = make_grade()
