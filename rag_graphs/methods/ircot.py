"""IRCoT (Trivedi et al. 2023): interleave retrieval with chain-of-thought.

    START -> retrieve -> reason --(new CoT sentence = next query)--> retrieve ...
                             \\--("So the answer is" | budget | repeat)--> generate -> END

Each reasoning step writes one sentence from the passages so far; that
sentence is the next retrieval query, so retrieval follows the reasoning to
the bridge entity. The final answer is generated from every retrieved
passage and the whole chain of thought.
"""

from __future__ import annotations

import re

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from prompts import load_prompt
from rag_graphs.context import RagContext, get_context
from rag_graphs.methods import compile_method, new_builder
from rag_graphs.nodes import make_generate, retrieve
from rag_graphs.nodes.common import call_chat, emit, template_inputs
from rag_graphs.nodes.decide import retrieve_until_stopped
from rag_graphs.nodes.retrieve import normalize_query
from rag_graphs.nodes.rewrite import clean_query
from rag_graphs.state import RagState

_ANSWER = re.compile(r"\bso\s+the\s+answer\s+is\b", re.IGNORECASE)
_REASON = load_prompt("ircot_reason")


def reason(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Write the next chain-of-thought sentence; it becomes the next query unless the chain ends."""
    ctx = get_context(runtime)
    reply, used = call_chat(ctx, _REASON.format_messages(**template_inputs(_REASON, state)))
    sentence = clean_query(str(reply.content), fallback="")
    searched = {normalize_query(q) for q in state.get("queries", [])}
    if _ANSWER.search(sentence):
        stop = "enough"
    elif not sentence:
        stop = "no reasoning sentence produced"
    elif len(state.get("queries", [])) >= ctx.max_hops:
        stop = f"hop budget reached ({ctx.max_hops} retrievals)"
    elif normalize_query(sentence) in searched:
        stop = f"repeated query: {sentence}"
    else:
        stop = ""
    emit("reason", "end", thought=sentence, stop=stop)
    update: dict = {
        "notes": [sentence] if sentence else [],
        "stop_reason": stop,
        "steps": [
            {"node": "reason", "kind": "decide", "text": sentence + (f" [stop: {stop}]" if stop else "")}
        ],
        "usage": used,
    }
    if not stop:
        update["query"] = sentence
    return update


def build() -> StateGraph:
    """The uncompiled graph."""
    builder = new_builder()
    builder.add_node("retrieve", retrieve)
    builder.add_node("reason", reason)
    builder.add_node("generate", make_generate("answer_with_notes"))
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "reason")
    builder.add_conditional_edges("reason", retrieve_until_stopped)
    builder.add_edge("generate", END)
    return builder


graph = compile_method(build(), "ircot")
