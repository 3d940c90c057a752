"""HyDE (Gao et al. 2022): search with a hypothetical answer passage instead of the question.

    START -> hypothesize -> retrieve -> generate -> END

The model writes the passage it expects a reference text to contain; the
question plus that passage is embedded (and, in hybrid mode, matched by
BM25), so the search looks for documents that read like answers rather
than like questions. The answer is generated from the real passages only.
"""

from __future__ import annotations

from langgraph.graph import StateGraph

from rag_graphs.methods import compile_method, linear_builder
from rag_graphs.nodes import make_generate, make_rewrite, retrieve


def build() -> StateGraph:
    """The uncompiled graph."""
    return linear_builder(
        ("hypothesize", make_rewrite("hyde_passage", name="hypothesize", passage=True)),
        ("retrieve", retrieve),
        ("generate", make_generate()),
    )


graph = compile_method(build(), "hyde")
