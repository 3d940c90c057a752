"""The Milvus collection of chunks, and the only code that talks to Milvus.

``index`` (``ChunkIndex``, ``open_index``), ``filters`` (filter expressions and their safety
check), ``lite`` (Milvus Lite paths: the one-process lock and damaged manifests), ``reads``
(searches and lookups), ``embeddings`` (the embedding model that fills it) and ``sentences``
(small-to-big child rows, searched for their parent chunks).

May import ``rag_graphs.ingestion.quiet`` and, for the one field name sentence rows leave out,
``rag_graphs.ingestion.graph.build.entities``; never ``rag_graphs.ingestion.convert.entry`` or
``rag_graphs``. Nothing is
imported here: a settings check that needs ``filters`` must not load Milvus.
"""
