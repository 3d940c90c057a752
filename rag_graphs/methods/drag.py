"""DRAG (Yue et al. 2024): demonstration-based RAG, one retrieval, long context used well.

    START -> retrieve -> arrange -> generate -> END

The answer prompt holds ``RagContext.num_demos`` solved examples (question,
its documents, its answer; from ``RagContext.demonstrations``) and the ``k``
retrieved documents, ordered so the most relevant sits right before the
question. Scaling ``k`` and ``num_demos`` is how DRAG spends more inference
compute; the evaluator plots quality against it.

When it pays: long-context chat models, where solved examples in the prompt raise quality; one
search only.
Cost: one search and one model call with a long prompt (``k`` passages and ``num_demos`` (2)
demonstrations, about 2,000 tokens).
"""

from __future__ import annotations

from langgraph.graph import StateGraph
from langgraph.runtime import Runtime

from rag_graphs.config.context import RagContext
from rag_graphs.config.runtime import get_context
from rag_graphs.nodes import make_generate, retrieve
from rag_graphs.nodes.builder import compile_method, linear_builder
from rag_graphs.nodes.events import step
from rag_graphs.nodes.inputs import latest_documents, shown_demonstrations
from rag_graphs.search.fusion import most_relevant_last
from rag_graphs.state import RagState


def arrange(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Order the retrieved documents most-relevant-last and record the context budget."""
    ctx = get_context(runtime)
    docs = most_relevant_last(latest_documents(state))
    demos = len(shown_demonstrations(ctx, state["question"]))
    text = f"{len(docs)} documents (most relevant last), {demos} demonstrations"
    return {"evidence": docs, "steps": [step("note", text=text)]}


def build() -> StateGraph:
    """The uncompiled graph."""
    return linear_builder(
        ("retrieve", retrieve), ("arrange", arrange), ("generate", make_generate("drag_answer"))
    )


graph = compile_method(build(), "drag")
