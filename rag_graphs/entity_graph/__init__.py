"""The entity graph behind graph search (HippoRAG): entity extraction (``entities``), entity
rows built from the chunks (``build``), synonym links between entities (``linking``), the
question's facts (``facts``), the neighbourhood read from the store (``neighbourhood``), the walk
over it (``walk``) and graph search by personalised PageRank (``ppr``).

May import ``rag_graphs.store``, ``rag_graphs.support.progress`` and
``rag_graphs.prompts``; nothing else of ``rag_graphs``.
"""
