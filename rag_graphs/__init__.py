"""rag-graphs: advanced and multi-hop RAG methods as LangGraph state machines.

from rag_graphs.methods.naive import graph
result = graph.invoke({"question": "Where was the founder of Django born?"})
result["answer"], result["citations"], result["steps"], result["usage"]
"""

from rag_graphs.context import RagContext

__all__ = ["RagContext"]
__version__ = "0.1.0"
