"""The names of things, for modules at every layer: methods, the question kinds ``auto``
routes, the structures derived from a collection and which method needs which. Imports nothing of
ours (and nothing heavy), so the settings can check a route, and the evaluator can see what a
method needs, without importing the methods that sit above them."""

from __future__ import annotations

from collections.abc import Iterable

METHODS: dict[str, str] = {
    "naive": "one retrieval with the question, then an answer with citations",
    "fixed_step": "a fixed number of hops: query, retrieve, intermediate answer, next query",
    "iterative": "retrieve until the model judges the information enough (bounded, no repeats)",
    "react": "ReAct: an agent that calls search and calculator tools (native tool calls or a text protocol)",
    "ircot": "IRCoT: each chain-of-thought sentence becomes the next retrieval query",
    "self_rag": "Self-RAG: decide to retrieve, grade passages, check the answer, retry when unsupported",
    "crag": "Corrective RAG: grade passages, rewrite and search again (or the web) when none is correct",
    "hyde": "HyDE: search with a hypothetical answer passage the model writes",
    "multi_query": "multi-query: several rewrites searched in one batch, unique union of the hits",
    "rag_fusion": "RAG-Fusion: related queries searched in one batch, fused by reciprocal rank fusion",
    "step_back": "step-back: retrieve for the question and for a more general step-back question",
    "decomposition": "decomposition: 2-4 sub-questions answered in parallel or in order, then synthesised",
    "planned": "planned path: ordered sub-questions, later ones filled with earlier answers (#1, #2)",
    "drag": "DRAG: k documents (most relevant last) plus m solved demonstrations in one long context",
    "iterdrag": "IterDRAG: DRAG with interleaved 'Follow up:' retrievals and intermediate answers",
    "raptor": "RAPTOR: search a tree of cluster summaries (collapsed or top-down); build it first",
    "hipporag": "HippoRAG: one graph search (PageRank over the entities chunks share), then an answer",
    "graphrag": "GraphRAG: map-reduce over community reports (global), or entities' reports and passages",
    "auto": "adaptive router: classify the question, dispatch to the method RagContext.routes names",
}
"""Method name (module ``rag_graphs.methods.<name>``) -> one-line description, in the order
they are usually compared."""

ROUTED_KINDS = ("single_hop", "multi_hop", "global_summary")
"""Question kinds ``RagContext.routes`` maps to methods (``no_retrieval`` is answered directly)."""

STRUCTURES: dict[str, str] = {
    "entity_graph": "rag-graphs graph build",
    "sentences": "rag-graphs sentences build",
    "reports": "rag-graphs graph communities",
    "raptor_tree": "rag-graphs raptor build",
}
"""The structures derived from a collection's chunks -> the command that builds (or finishes) one
over an ingested collection, in the order they are built: community reports read the entity
graph, and come before the RAPTOR tree because their cost is known (and refused) before any call.
Whether a store has one is answered by ``rag_graphs.search.structures.has_structure``."""

REQUIRES: dict[str, tuple[str, ...]] = {
    "raptor": ("raptor_tree",),
    "hipporag": ("entity_graph",),
    "graphrag": ("entity_graph", "reports"),
}
"""Method -> the derived structures (``STRUCTURES``) it searches; a method not named needs the
chunks alone. ``eval`` builds what a store lacks, ``auto`` routes elsewhere, and the demo builds
them, all from this one declaration, never from a method's name."""


def required(methods: Iterable[str]) -> tuple[str, ...]:
    """The structures ``methods`` need together, in ``STRUCTURES``' build order."""
    wanted = {s for m in methods for s in REQUIRES.get(m, ())}
    return tuple(s for s in STRUCTURES if s in wanted)
