"""The shared ``grade`` node: judge each retrieved passage, keep the useful ones.

One structured call per passage (``Grade``), so a malformed reply costs one
passage its grade (it defaults to ``ambiguous`` and is kept), never the run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from langgraph.runtime import Runtime
from pydantic import BaseModel

from prompts import load_prompt
from prompts.fencing import fence
from rag_graphs.context import RagContext, get_context
from rag_graphs.nodes.common import calls_usage, chat_model, emit, latest_documents
from rag_graphs.nodes.retrieve import last_retrieval_skipped
from rag_graphs.state import RagState, add_usage
from rag_graphs.structured import invoke_structured


class Grade(BaseModel):
    """How useful one passage is for the question."""

    relevance: Literal["correct", "ambiguous", "incorrect"]


def make_grade(prompt: str = "grade_correctness") -> Callable[..., dict]:
    """Build a node that grades the latest retrieval's passages with template ``prompt``.

    Keeps correct and ambiguous passages (with all earlier kept ones) in
    ``context``; sets ``enough`` when one is correct, and ``stop_reason`` when
    none is and the hop budget is spent.
    """
    template = load_prompt(prompt)

    def grade(state: RagState, runtime: Runtime[RagContext]) -> dict:
        ctx = get_context(runtime)
        model = chat_model(ctx)
        kept = list(state.get("context") or [])
        grades, used = [], {}
        for doc in latest_documents(state):
            messages = template.format_messages(question=state["question"], passage=fence(doc.page_content))
            out = invoke_structured(model, messages, Grade, Grade(relevance="ambiguous"))
            used = add_usage(used, calls_usage(out.calls))
            grades.append((doc, out.value.relevance))
            if out.value.relevance != "incorrect" and doc.id not in {d.id for d in kept}:
                kept.append(doc)
        enough = any(g == "correct" for _, g in grades)
        reason = ""
        if not enough and last_retrieval_skipped(state):
            reason = "repeated query without a correct passage"
        elif not enough and len(state.get("queries", [])) >= ctx.max_hops:
            reason = f"hop budget reached ({ctx.max_hops} retrievals) without a correct passage"
        text = ", ".join(f"{d.id}: {g}" for d, g in grades) or "nothing new to grade"
        emit("grade", "end", grades={str(d.id): g for d, g in grades})
        return {
            "context": kept,
            "enough": enough,
            "stop_reason": reason,
            "steps": [
                {"node": "grade", "kind": "grade", "doc_ids": [str(d.id) for d, _ in grades], "text": text}
            ],
            "usage": used,
        }

    return grade


grade = make_grade()
