"""The entity graph behind graph search (HippoRAG): entity extraction (``entities``), entity
rows built from the chunks (``build``), synonym links between entities (``linking``) and graph
search by personalised PageRank (``ppr``).

May import ``rag_graphs.ingestion.store.index``, ``rag_graphs.ingestion.progress`` and ``prompts``; never
``rag_graphs``.
"""
