"""The entity graph behind graph search (HippoRAG): entity extraction (``entities``), entity
rows built from the chunks (``build``), synonym links between entities (``linking``) and graph
search by personalised PageRank (``ppr``).

May import ``ingestion.store.index``, ``ingestion.progress`` and ``prompts``; never ``rag_graphs``.
"""
