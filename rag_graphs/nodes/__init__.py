"""Shared nodes (decide, rewrite, retrieve, grade, generate; expand is query fan-out, plan the
planned path): written once, wired by methods. Beside them: ``model_node`` (``ModelNode``),
``chat`` (the run's model, usage), ``events`` (steps, progress events), ``inputs`` (what a prompt
reads from the state), ``loop`` (the one loop-stop rule) and ``builder`` (the method builder).

May import the ``rag_graphs`` core (catalog, state, config, llm, search, text), ``ingestion`` and
``prompts``; never methods, run, eval or the commands.
"""

from rag_graphs.nodes.decide import Decision, decide, make_decide
from rag_graphs.nodes.expand import make_expand
from rag_graphs.nodes.generate import generate, make_generate, make_intermediate
from rag_graphs.nodes.retrieve import make_retrieve_many, retrieve
from rag_graphs.nodes.rewrite import make_rewrite

__all__ = [
    "Decision",
    "decide",
    "generate",
    "make_decide",
    "make_expand",
    "make_generate",
    "make_intermediate",
    "make_retrieve_many",
    "make_rewrite",
    "retrieve",
]
