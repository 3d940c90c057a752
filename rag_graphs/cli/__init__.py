"""The ``rag-graphs`` command (``rag-graphs = "rag_graphs.cli:app"``).

Settings, graphs, models and the store are imported inside the commands, so ``rag-graphs --help``
stays light. May import anything in ``rag_graphs`` and ``ingestion``; nothing imports it.
"""

from rag_graphs.cli.shared import app, main

__all__ = ["app", "main"]
