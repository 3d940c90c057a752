"""IRCoT (Trivedi et al. 2023): interleave retrieval with chain-of-thought.

    START -> retrieve -> reason --(new CoT sentence = next query)--> retrieve ...
                             \\--("So the answer is" | budget | repeat)--> generate -> END

Each reasoning step writes one sentence from the passages so far; that
sentence is the next retrieval query, so retrieval follows the reasoning to
the bridge entity. The final answer is generated from every retrieved
passage and the whole chain of thought.

When it pays: multi-hop questions whose next hop is named in the passages found so far (2-4 hops);
it raised supporting-passage recall over naive on HotpotQA.
Cost: up to ``max_hops`` (3) searches, one model call per reasoning sentence, plus the answer.
"""

from __future__ import annotations

import operator
import re
from typing import Annotated

from langgraph.graph import END, StateGraph

from rag_graphs.config.context import RagContext
from rag_graphs.llm.calls import Body
from rag_graphs.nodes import make_generate, retrieve
from rag_graphs.nodes.builder import BEGIN, compile_method, new_builder
from rag_graphs.nodes.chat import chat
from rag_graphs.nodes.decide import retrieve_until_stopped
from rag_graphs.nodes.events import emit, step
from rag_graphs.nodes.inputs import format_notes, template_inputs
from rag_graphs.nodes.loop import hop_budget, loop_stop, stop_update
from rag_graphs.nodes.model_node import ModelNode, model_node
from rag_graphs.nodes.rewrite import clean_query
from rag_graphs.prompts import load_prompt
from rag_graphs.state import RagState

_ANSWER = re.compile(r"\bso\s+the\s+answer\s+is\b", re.IGNORECASE)
_REASON = load_prompt("ircot_reason")


class IrcotState(RagState, total=False):
    thoughts: Annotated[list[str], operator.add]  # the chain of thought, one sentence per step


@model_node
def reason(state: IrcotState, ctx: RagContext) -> Body[dict]:
    """Write the next chain-of-thought sentence; it becomes the next query unless the chain ends."""
    chain = format_notes(state.get("thoughts", []))
    reply, used = yield from chat(
        ctx, _REASON.format_messages(**template_inputs(_REASON, state, notes=chain))
    )
    sentence = clean_query(str(reply.content), fallback="")
    budget = hop_budget(state, ctx.max_hops)
    stop = loop_stop(state, budget, done=bool(_ANSWER.search(sentence)), next_query=sentence)
    emit("end", thought=sentence, stop=stop.reason if stop else "")
    update: dict = {
        "thoughts": [sentence] if sentence else [],
        **stop_update(stop),
        "steps": [step("decide", text=sentence + (f" [stop: {stop.reason}]" if stop else ""))],
        "usage": used,
    }
    if stop is None:
        update["query"] = sentence
    return update


def answer_with_chain() -> ModelNode:
    """The final answer, shown every passage and the whole chain of thought as its notes."""
    return make_generate("answer_with_notes", notes=lambda state: format_notes(state.get("thoughts", [])))


def build() -> StateGraph:
    """The uncompiled graph."""
    builder = new_builder(IrcotState)
    builder.add_node("retrieve", retrieve)
    builder.add_node("reason", reason)
    builder.add_node("generate", answer_with_chain())
    builder.add_edge(BEGIN, "retrieve")
    builder.add_edge("retrieve", "reason")
    builder.add_conditional_edges("reason", retrieve_until_stopped)
    builder.add_edge("generate", END)
    return builder


graph = compile_method(build(), "ircot")
