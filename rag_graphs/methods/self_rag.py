"""Self-RAG (Asai et al. 2023), as a graph of reflection decisions.

    START -> need_retrieval --(no)--> answer_directly -> END
                  \\--(yes)--> retrieve -> grade --(a passage kept | stop)--> generate -> check
                                              \\--(none kept)--> follow_up -> retrieve ...
    check --(grounded and complete | out of attempts | repeat)--> END
          \\--(otherwise)--> follow_up -> retrieve -> grade -> generate -> check ...

Each reflection token of the paper is a structured decision here: retrieve?
(``NeedRetrieval``), how relevant is this passage? (a 0-10 score against
``RagContext.relevance_threshold``, all passages graded in one batch), is the
answer grounded in the passages? is it complete? (two separate checks, run side
by side). A follow-up query is written from the answer so far, the passages and
that verdict, so an incomplete answer searches for the missing part instead of
rewording the question. Every attempt regenerates from all passages kept so far.
Attempts are retrieval rounds, bounded by ``max_hops`` (default 3).

The run ends with a ``confidence``: ``high`` when the answer is grounded and complete;
``medium`` when it is grounded but incomplete (or a check could not be parsed);
``low`` when it is not grounded, in which case the answer is the explicit
unreliable text (``prompts/templates/unreliable_answer.txt``) and ``outcome`` is
``unreliable``: an answer its own check rejected is not returned as the answer
(it stays in ``steps``). Unparseable decisions default to what cannot loop:
retrieve, keep the passage, accept the answer.

When it pays: when a wrong answer costs more than none: it checks that its answer is grounded and
complete, and says ``unreliable`` rather than return one it could not ground.
Cost: the most model calls per question: a retrieve-or-not decision, a grading batch (one call per
passage) and an answer with two checks per attempt, up to ``max_hops`` (3) attempts.
"""

from __future__ import annotations

from typing import Annotated, Literal

from langgraph.graph import END, StateGraph
from pydantic import BaseModel, Field

from rag_graphs.config.context import RagContext
from rag_graphs.llm.calls import Batch, Body
from rag_graphs.llm.structured import structured
from rag_graphs.nodes import make_generate, make_rewrite, retrieve
from rag_graphs.nodes.builder import BEGIN, compile_method, new_builder
from rag_graphs.nodes.chat import calls_usage, chat_model
from rag_graphs.nodes.events import emit, step
from rag_graphs.nodes.generate import finish, prompt_text
from rag_graphs.nodes.grade import RelevanceScore, make_grade
from rag_graphs.nodes.inputs import answer_documents, template_inputs
from rag_graphs.nodes.loop import Stop, hop_budget, loop_stop, stop_update
from rag_graphs.nodes.model_node import model_node
from rag_graphs.prompts import load_prompt
from rag_graphs.prompts.fencing import fence
from rag_graphs.state import Confidence, RagState, Unset, add_usage


class NeedRetrieval(BaseModel):
    """Whether the question needs facts from the collection."""

    retrieve: bool


class Grounded(BaseModel):
    """Whether every fact of the answer is stated in the passages."""

    grounded: bool = Field(description="every fact in the answer is in the passages")


class Complete(BaseModel):
    """Whether the answer answers the whole question."""

    complete: bool = Field(description="the answer gives everything the question asks for")


_NEED = load_prompt("decide_retrieval")
_GROUNDED = load_prompt("check_grounded")
_COMPLETE = load_prompt("check_complete")


class SelfRagState(RagState, total=False):
    needs_retrieval: Annotated[bool, Unset(True)]  # the first reflection: is the collection needed at all
    grounded: bool  # the latest answer's checks (unset before the first answer)
    complete: bool


@model_node
def need_retrieval(state: SelfRagState, ctx: RagContext) -> Body[dict]:
    """Decide whether to retrieve at all (default: retrieve)."""
    messages = _NEED.format_messages(question=state["question"])
    out = yield from structured(chat_model(ctx), messages, NeedRetrieval, NeedRetrieval(retrieve=True))
    emit("end", retrieve=out.value.retrieve)
    return {
        "needs_retrieval": out.value.retrieve,
        "steps": [step("decide", text=f"retrieve={out.value.retrieve} via {out.method}")],
        "usage": calls_usage(out.calls),
    }


def confidence_of(grounded: bool, complete: bool, parsed: bool) -> Confidence:
    """``high``: grounded and complete, both checks parsed; ``medium``: grounded but incomplete
    (or a check fell back to its default); ``low``: not grounded.

    A check whose reply cannot be parsed counts as failed (``Grounded(grounded=False)``,
    ``Complete(complete=False)``): a weak model's unreadable verdict never lets an answer
    pass as checked (a run once ended ``answered`` with the answer ``{"retrieve": true}``)."""
    if not grounded:
        return "low"
    return "high" if complete and parsed else "medium"


@model_node
def check(state: SelfRagState, ctx: RagContext) -> Body[dict]:
    """Check the answer is grounded and complete (two calls, one batch); stop when it is, or
    when the loop must stop, and then finish the run with its confidence and outcome."""
    docs = answer_documents(state)
    budget = hop_budget(state, ctx.max_hops)
    if not docs:  # nothing relevant was kept: nothing to check the answer against
        none_kept = loop_stop(state, budget) or Stop("no_evidence", "no relevant passage was found")
        text = f"no relevant passage to check the answer against; stop: {none_kept.reason}"
        noted = [step("grade", text=text)]
        # the draft was written from no passage: it stays in ``steps``, never as the answer
        answer = prompt_text("no_evidence_answer", reason="no retrieved passage was relevant")
        return {
            "steps": noted,
            **stop_update(none_kept),
            "answer": answer,
            "citations": [],
            "confidence": "low",
            "outcome": "no_evidence",
        }
    model = chat_model(ctx)
    checks = yield Batch(
        [
            structured(
                model,
                _GROUNDED.format_messages(**template_inputs(_GROUNDED, state, answer=fenced_answer(state))),
                Grounded,
                Grounded(grounded=False),  # a check that cannot be read never passes
            ),
            structured(
                model,
                _COMPLETE.format_messages(**template_inputs(_COMPLETE, state, answer=fenced_answer(state))),
                Complete,
                Complete(complete=False),
            ),
        ],
        max_concurrency=ctx.max_concurrency,
    )
    grounded, complete = checks[0].value.grounded, checks[1].value.complete
    parsed = all(c.method != "default" for c in checks)
    stop = loop_stop(state, budget, done=grounded and complete)
    text = f"grounded={grounded}; complete={complete}; via {checks[0].method}/{checks[1].method}"
    emit("end", grounded=grounded, complete=complete, stop=stop.reason if stop else "")
    update: dict = {
        "grounded": grounded,
        "complete": complete,
        "usage": add_usage(calls_usage(checks[0].calls), calls_usage(checks[1].calls)),
        **stop_update(stop),
    }
    if stop is None:
        return update | {"steps": [step("grade", text=text)]}
    confidence = confidence_of(grounded, complete, parsed)
    text += f"; stop: {stop.reason}; confidence={confidence}"
    update |= {"confidence": confidence, "steps": [step("grade", text=text)]}
    if not grounded:  # its own check rejected the answer: say so instead of returning it
        reason = "the answer is not supported by the passages found"
        answer = prompt_text("unreliable_answer", reason=reason)
        return update | {"answer": answer, "citations": [], "outcome": "unreliable"}
    final = finish({**state, **update}, state.get("answer", ""), docs)  # type: ignore[typeddict-unknown-key]
    return update | final


def fenced_answer(state: SelfRagState) -> str:
    """The answer as the checks read it: fenced as data, as the judges read it. The answer was
    written from retrieved passages, so it may repeat a document's text; outside a fence, a
    sentence telling the checker the answer is supported read as an instruction (attack round 3's
    judge break, here in Self-RAG's own reflection)."""
    return fence(state.get("answer", ""))


def follow_up_inputs(state: SelfRagState) -> dict[str, str]:
    """The latest check's verdict for the follow-up prompt ("not checked" before a first answer)."""
    shown = {True: "yes", False: "no", None: "not checked"}
    if "answer" not in state:
        return {"answer": "(no answer yet)", "grounded": shown[None], "complete": shown[None]}
    verdict = {"grounded": shown[state.get("grounded")], "complete": shown[state.get("complete")]}
    return {"answer": fenced_answer(state), **verdict}


def route_after_need(state: SelfRagState) -> Literal["retrieve", "answer_directly"]:
    """Retrieve unless the model judged the question answerable without documents."""
    return "retrieve" if state.get("needs_retrieval", True) else "answer_directly"


def route_after_grade(state: SelfRagState) -> Literal["generate", "follow_up"]:
    """Answer when a passage of this round was kept or the loop must stop; else search again."""
    return "generate" if state.get("found_correct") or state.get("stop_kind") else "follow_up"


def route_after_check(state: SelfRagState) -> Literal["follow_up", "__end__"]:
    """Finish when the check node says stop; otherwise search for what the answer lacks."""
    return "__end__" if state.get("stop_kind") else "follow_up"


def build() -> StateGraph:
    """The uncompiled graph."""
    builder = new_builder(SelfRagState)
    builder.add_node("need_retrieval", need_retrieval)
    builder.add_node("answer_directly", make_generate("answer_directly"))
    builder.add_node("retrieve", retrieve)
    builder.add_node("grade", make_grade("grade_relevance", RelevanceScore))
    builder.add_node("generate", make_generate(final=False))
    builder.add_node("check", check)
    follow_up = make_rewrite("self_rag_follow_up", name="follow_up", extra=follow_up_inputs)
    builder.add_node("follow_up", follow_up)
    builder.add_edge(BEGIN, "need_retrieval")
    builder.add_conditional_edges("need_retrieval", route_after_need)
    builder.add_edge("answer_directly", END)
    builder.add_edge("retrieve", "grade")
    builder.add_conditional_edges("grade", route_after_grade)
    builder.add_edge("generate", "check")
    builder.add_conditional_edges("check", route_after_check)
    builder.add_edge("follow_up", "retrieve")
    return builder


graph = compile_method(build(), "self_rag")
