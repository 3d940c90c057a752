"""``python -m rag_graphs.cli``: the ``rag-graphs`` command."""

from rag_graphs.cli import main

main()
