"""``SetupError``: a setting that points at something that is not there, refused in one line.

Raised by the checks beside what they check (``rag_graphs.store.checks``, ``rag_graphs.llm.models``,
``rag_graphs.entity_graph.rows.check_graph``), at the first search or model call of a run, before
any model call that search would feed; defined here, at the bottom, so every layer can raise it and
every caller can catch it.
"""

from __future__ import annotations


class SetupError(ValueError):
    """A setting points at something that is not there (a ``ValueError``: bad input, one message)."""
