"""Shared nodes (decide, rewrite, retrieve, grade, generate): written once, wired by methods."""

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
