"""Run settings, as data: ``RagContext`` (``context``), its field types (``fields``), the setting
vocabulary of spec strings with their parsers and checks (``specs``), ``SetupError`` (``errors``),
what a traced run says about itself (``tracing``) and the checkpoints file of ``thread_id`` runs
(``threads``).

A leaf: imports only ``rag_graphs.catalog`` and ``rag_graphs.support`` of ours, and building a
``RagContext`` builds no live object (no store client, model or web tool): the layers above build
what a setting names, where they use it (docs/architecture.md).
"""
