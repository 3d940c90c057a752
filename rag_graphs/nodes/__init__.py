"""Shared nodes (decide, rewrite, retrieve, grade, generate): written once, wired by methods."""

from rag_graphs.nodes.generate import generate, make_generate
from rag_graphs.nodes.retrieve import retrieve

__all__ = ["generate", "make_generate", "retrieve"]
