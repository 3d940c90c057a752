"""The ``rag-graphs`` command (``rag-graphs = "rag_graphs.cli:app"``): one module per command group.

``shared`` (the app, consoles, option types declared once, the context and failure helpers),
``ingest`` (ingest, sources), ``ask``, ``evaluate`` (eval, mine-demos), ``build`` (sentences,
raptor and graph builds) and ``info`` (methods, demo). Importing this package registers every
command on ``app``.

Settings, graphs, models and the store are imported inside the commands, so ``rag-graphs --help``
stays light. May import anything in ``rag_graphs`` and ``ingestion``; nothing imports it.
"""

import sys

from rag_graphs.cli import ask, build, evaluate, info, ingest  # noqa: F401  (they register commands)
from rag_graphs.cli.shared import app

__all__ = ["app", "main"]


def main() -> None:  # pragma: no cover
    app(sys.argv[1:])
