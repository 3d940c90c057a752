"""The entity graph behind graph search (HippoRAG): entity extraction (``entities``), entity
rows built from the chunks (``rows``, ``build``), and graph search (``graph_search.graph_search``), a
pipeline of four stages: link the question (``linking``, with the first searches beside it in
``first_search``), read its neighbourhood (``neighbourhood``), walk it (``walk``) and rank the
walked chunks under hybrid search's top (``rank``).

May import ``rag_graphs.store``, ``rag_graphs.config``, ``rag_graphs.support.progress`` and
``rag_graphs.prompts``; nothing else of ``rag_graphs``.
"""
