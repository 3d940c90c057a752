"""Whether a store has each derived structure, by the names ``rag_graphs.catalog.STRUCTURES`` gives
them, and the one-line refusal when a method's declared needs (``catalog.REQUIRES``) are missing.

Each question is answered by the structure's own module, once: the entity graph by
``entity_graph.rows.has_graph``, sentence rows by ``store.sentences.has_sentences``, the RAPTOR tree
by ``search.tree.has_tree``, community reports by ``search.reports.has_reports``. This module only
names them, so the evaluator, ``auto`` and the demo read one table rather than four modules
(``tests/unit/test_derived_layout.py`` keeps every other module from asking on its own)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rag_graphs.catalog import REQUIRES, STRUCTURES
from rag_graphs.config.context import RagContext
from rag_graphs.config.errors import SetupError
from rag_graphs.entity_graph.rows import has_graph
from rag_graphs.search.reports import has_reports
from rag_graphs.search.retrieval import index_for
from rag_graphs.search.tree import has_tree
from rag_graphs.store.sentences import has_sentences

LABELS: dict[str, str] = {
    "entity_graph": "entity graph",
    "sentences": "sentence rows",
    "raptor_tree": "RAPTOR tree",
    "reports": "community reports",
}
"""What a message calls each structure."""

_CHECKS: dict[str, Callable[[RagContext], bool]] = {
    "entity_graph": lambda ctx: ctx.retriever is None and has_graph(index_for(ctx)),
    "sentences": lambda ctx: ctx.retriever is None and has_sentences(index_for(ctx)),
    "raptor_tree": has_tree,
    "reports": has_reports,
}
if set(_CHECKS) != set(STRUCTURES) or set(LABELS) != set(STRUCTURES):  # a structure added to the catalog only
    raise RuntimeError(f"rag_graphs/search/structures.py: check and label every one of {sorted(STRUCTURES)}")


def has_structure(ctx: RagContext, structure: str) -> bool:
    """True when the store and collection ``ctx`` names has ``structure`` (never with the user's
    own retriever: it has no store to derive from)."""
    if structure not in _CHECKS:
        raise ValueError(f"unknown derived structure {structure!r}; known: {', '.join(STRUCTURES)}")
    return _CHECKS[structure](ctx)


def missing(ctx: RagContext, structures: Iterable[str]) -> list[str]:
    """The ``structures`` ``ctx``'s collection lacks, in the order given."""
    return [s for s in structures if not has_structure(ctx, s)]


def lacking(ctx: RagContext, method: str) -> list[str]:
    """What ``method`` declares it needs (``catalog.REQUIRES``) and ``ctx``'s collection lacks."""
    return missing(ctx, REQUIRES.get(method, ()))


def refusal(method: str, collection: str, structures: list[str]) -> str:
    """One line: what ``method`` needs that ``collection`` lacks, and the command that builds each."""
    what = " and ".join(LABELS[s] for s in structures)
    how = ", then ".join(f"`{STRUCTURES[s]}`" for s in structures)
    return f"{method} needs the {what} of collection {collection!r}, which it lacks: run {how} first"


def refuse_missing(ctx: RagContext, method: str) -> None:
    """Raise ``SetupError`` (one line, naming each missing structure and its command) when the
    collection lacks something ``method`` declares it needs."""
    if absent := lacking(ctx, method):
        raise SetupError(refusal(method, ctx.collection, absent))
