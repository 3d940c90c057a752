"""``python -m rag_graphs.cli``: the ``rag-graphs`` command."""

from rag_graphs.cli import main

if __name__ == "__main__":  # pragma: no cover - imported (not run) when every module is walked
    main()
