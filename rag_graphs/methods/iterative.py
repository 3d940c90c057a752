"""Iterative retrieval: retrieve, then decide whether it is enough or what to search next.

    START -> retrieve -> intermediate -> decide --(next query)--> retrieve ...
                                              \\--(enough | budget | repeat)--> generate -> END

The loop is bounded by ``RagContext.max_hops`` retrievals and stops on a
repeated query; the decide node records why it stopped, and the answer says
in ``steps`` when it was forced by the budget.

When it pays: multi-hop questions whose number of hops is unknown: it stops as soon as the model
judges the passages enough, or (``RagContext.stop_rule``, the default on the extract reader's path)
as soon as the extract reader finds an answer it is sure of, without asking the model.
Cost: up to ``max_hops`` (3) searches, two model calls per round (intermediate answer, decision;
no decision call in a round the reader ends), plus the answer (none with the extract reader).
"""

from __future__ import annotations

from langgraph.graph import END, StateGraph

from rag_graphs.nodes import decide, make_generate, make_intermediate, retrieve
from rag_graphs.nodes.builder import BEGIN, compile_method, new_builder
from rag_graphs.nodes.decide import retrieve_until_stopped


def build() -> StateGraph:
    """The uncompiled graph."""
    builder = new_builder()
    builder.add_node("retrieve", retrieve)
    builder.add_node("intermediate", make_intermediate())
    builder.add_node("decide", decide)
    builder.add_node("generate", make_generate("answer_with_notes"))
    builder.add_edge(BEGIN, "retrieve")
    builder.add_edge("retrieve", "intermediate")
    builder.add_edge("intermediate", "decide")
    builder.add_conditional_edges("decide", retrieve_until_stopped)
    builder.add_edge("generate", END)
    return builder


graph = compile_method(build(), "iterative")
