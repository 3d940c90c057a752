"""IterDRAG (Yue et al. 2024): DRAG with interleaved follow-up retrieval and answers.

    START -> retrieve -> iterate --("Follow up: q")--> follow_up -> intermediate -> iterate ...
                                \\--("So the final answer is: a")--> END
                                \\--("No follow-up needed" | no marker | iterations spent)--> generate -> END

Each ``iterate`` call sees the demonstrations, every document gathered and
every follow-up so far (question -> intermediate answer), and either asks
one more follow-up or gives the final answer. As in the paper (and DRAG), the
documents are shown most relevant last, next to the question. A follow-up is
searched and answered from its own documents (``iterdrag_intermediate``, which
asks for the "Intermediate answer:" line of the paper's format), so the next
step is conditioned on all earlier answers. "No follow-up needed" without a
final answer goes to the answer from everything gathered. ``RagContext.iterdrag_iterations`` caps
follow-ups (the paper's n, 5); a first reply with the final answer is DRAG.

When it pays: long-context chat models on multi-hop questions: DRAG that may search follow-up
questions before it answers.
Cost: one long-prompt call per iteration (up to ``iterdrag_iterations``, 5 follow-ups), one search
and one intermediate-answer call per follow-up.
"""

from __future__ import annotations

import operator
import re
from typing import Annotated, Literal

from langgraph.graph import END, StateGraph

from rag_graphs.config.context import RagContext
from rag_graphs.llm.calls import Body
from rag_graphs.nodes import make_generate, make_intermediate, retrieve
from rag_graphs.nodes.builder import BEGIN, compile_method, new_builder
from rag_graphs.nodes.chat import chat
from rag_graphs.nodes.events import emit, step
from rag_graphs.nodes.generate import finish
from rag_graphs.nodes.inputs import demonstrations_input, template_inputs
from rag_graphs.nodes.loop import STOP_ENOUGH, Budget, Stop, loop_stop, stop_update
from rag_graphs.nodes.model_node import model_node
from rag_graphs.nodes.reading import is_extract, read_answer
from rag_graphs.nodes.rewrite import clean_query
from rag_graphs.prompts import load_prompt
from rag_graphs.search.fusion import most_relevant_last
from rag_graphs.state import RagState
from rag_graphs.text.answers import clean_answer
from rag_graphs.text.citations import extract_citations, number_passages

_STEP = load_prompt("iterdrag_step")
MARKERS = {
    "follow_up": re.compile(r"follow[\s-]*up\s*:\s*", re.IGNORECASE),
    "intermediate": re.compile(r"intermediate\s+answer\s*:\s*", re.IGNORECASE),
    # the paper's "So the final answer is:"; small models often drop the "So"
    "final": re.compile(r"(?:so\s+)?the\s+final\s+answer\s+is\s*:?\s*", re.IGNORECASE),
}
NO_FOLLOW_UP = re.compile(
    r"no\s+(?:more\s+|further\s+)?follow[\s-]*ups?\s+(?:questions?\s+)?(?:is\s+|are\s+)?needed", re.IGNORECASE
)
"""The paper's "No follow-up needed": answer now (from everything gathered, when no final answer follows)."""
NO_FOLLOW_UP_STOP = Stop("no_follow_up", "no follow-up needed")


def parse_markers(text: str) -> list[tuple[str, str]]:
    """``(marker, value)`` for each marker in the reply, in order; a value runs to its line's end
    (the final answer: to the next marker or the end)."""
    found = sorted((m.start(), m.end(), name) for name, rx in MARKERS.items() for m in rx.finditer(text))
    out = []
    for i, (_, end, name) in enumerate(found):
        stop = found[i + 1][0] if i + 1 < len(found) else len(text)
        value = text[end:stop].strip()
        out.append((name, value if name == "final" else value.split("\n")[0].strip()))
    return out


def format_chain(state: RagState) -> str:
    """The run's follow-ups so far as the paper's lines (as in the demonstrations), so the
    model's next line is another "Follow up:" or "So the final answer is:"."""
    return "".join(
        f"Follow up: {a['query']}\nIntermediate answer: {a['answer']}\n" for a in state.get("sub_answers", [])
    ).rstrip()


class IterDragState(RagState, total=False):
    follow_ups: Annotated[list[str], operator.add]  # the follow-up queries asked so far, in order


@model_node
def iterate(state: IterDragState, ctx: RagContext) -> Body[dict]:
    """Ask the next follow-up, or give the final answer (whichever marker the reply leads with)."""
    docs = most_relevant_last(state.get("documents", []))  # the paper's order: best next to the question
    numbered = number_passages(docs)
    extra = {"context": numbered.text, "chain": format_chain(state)}
    extra |= demonstrations_input(_STEP, ctx, state["question"])
    reply, used = yield from chat(ctx, _STEP.format_messages(**template_inputs(_STEP, state, **extra)))
    text = str(reply.content).strip()
    decision = next(((n, v) for n, v in parse_markers(text) if n in ("follow_up", "final") and v), None)
    update: dict = {"usage": used, "steps": [step("decide", text=text)]}
    asked = state.get("follow_ups", [])
    if NO_FOLLOW_UP.search(text) and (decision is None or decision[0] != "final"):
        return update | stop_update(NO_FOLLOW_UP_STOP)
    if decision and decision[0] == "final":
        if is_extract(ctx):  # the reader reads the passages (best first) in this prompt's numbering
            read = read_answer(state, ctx, state.get("documents", []), numbered.shown)
            read["steps"] = [*update["steps"], *read["steps"]]
            return update | read | finish(state, read["answer"], docs, stop=STOP_ENOUGH)
        answer = clean_answer(decision[1])
        citations = extract_citations(answer, numbered.shown)
        update |= {"citations": citations, "shown": numbered.shown}
        return update | finish(state, answer, docs, stop=STOP_ENOUGH)
    if decision is None:
        return update | stop_update(Stop("no_form", "the reply had neither a follow-up nor a final answer"))
    query = clean_query(decision[1], fallback="")
    budget = Budget(len(asked), ctx.iterdrag_iterations, "follow-up")
    stop = loop_stop(state, budget, next_query=query, seen=[state["question"], *asked])
    if stop:
        return update | stop_update(stop)
    update["steps"][0]["query"] = query
    emit("end", follow_up=query)
    return update | {"query": query, "follow_ups": [query]}


def route_after_iterate(state: IterDragState) -> Literal["follow_up", "generate", "__end__"]:
    """Done on a final answer; answer from what was gathered when stopped; else follow up."""
    if state.get("stop_kind") == "enough":
        return "__end__"
    return "generate" if state.get("stop_kind") else "follow_up"


def build() -> StateGraph:
    """The uncompiled graph."""
    builder = new_builder(IterDragState)
    builder.add_node("retrieve", retrieve)
    builder.add_node("iterate", iterate)
    builder.add_node("follow_up", retrieve)
    builder.add_node("intermediate", make_intermediate("iterdrag_intermediate"))
    builder.add_node("generate", make_generate("answer_with_notes"))
    builder.add_edge(BEGIN, "retrieve")
    builder.add_edge("retrieve", "iterate")
    builder.add_conditional_edges("iterate", route_after_iterate, ["follow_up", "generate", END])
    builder.add_edge("follow_up", "intermediate")
    builder.add_edge("intermediate", "iterate")
    builder.add_edge("generate", END)
    return builder


graph = compile_method(build(), "iterdrag")
