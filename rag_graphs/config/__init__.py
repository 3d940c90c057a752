"""Run settings: ``RagContext`` (``context``), what a traced run says about itself
(``tracing``) and the checkpoints file of ``thread_id`` runs (``threads``).

May import ``rag_graphs.catalog``, ``rag_graphs.support.redaction`` and, inside validators only (a spec is
checked when it is set, and must not load its library before), ``rag_graphs.store.index``,
``rag_graphs.search`` and ``rag_graphs.llm.web``. Never nodes, methods or the commands.
"""
