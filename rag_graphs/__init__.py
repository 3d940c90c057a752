"""rag-graphs: advanced and multi-hop RAG methods as LangGraph state machines.

from rag_graphs import RagContext
from rag_graphs.methods.naive import graph
result = graph.invoke({"question": "Where was the founder of Django born?"}, context=RagContext())
result["answer"], result["citations"], result["steps"], result["usage"]
result["stop_reason"], result["outcome"]  # answered / budget_exhausted / unreliable / no_evidence

from rag_graphs import RagContext, RagRetriever  # the retrieve step alone, as a LangChain retriever
docs = RagRetriever(context=RagContext(reranker="mmr")).invoke("Who founded Django?")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rag_graphs.config.context import RagContext
    from rag_graphs.nodes.retrieve import RagRetriever

__all__ = ["RagContext", "RagRetriever"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """``RagContext`` and ``RagRetriever`` on first use (PEP 562): ``import rag_graphs.cli`` for
    ``rag-graphs --help`` must not pay for pydantic and LangChain's model classes."""
    if name == "RagContext":
        from rag_graphs.config.context import RagContext

        return RagContext
    if name == "RagRetriever":
        from rag_graphs.nodes.retrieve import RagRetriever

        return RagRetriever
    raise AttributeError(f"module 'rag_graphs' has no attribute {name!r}")
