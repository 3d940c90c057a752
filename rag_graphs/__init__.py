"""rag-graphs: advanced and multi-hop RAG methods as LangGraph state machines.

from rag_graphs.methods.naive import graph
result = graph.invoke({"question": "Where was the founder of Django born?"})
result["answer"], result["citations"], result["steps"], result["usage"]
result["stop_reason"], result["outcome"]  # answered / budget_exhausted / unreliable / no_evidence
"""

from rag_graphs.context import RagContext

__all__ = ["RagContext"]
__version__ = "0.1.0"
