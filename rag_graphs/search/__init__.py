"""The read side: one search path for every node (``retrieval``: a ``RagContext`` -> its search
plan -> a retriever), the searchers behind it (``searchers``: dense, hybrid, graph, the user's
own through ``own``), the cache wrapping any searcher (``cached``, over the process LRU ``cache``
and the persistent file ``disk_cache``), fusion of rankings (``fusion``), reranking (``rerank``),
compression (``compress``), neighbour expansion of hits (``neighbours``) and naming or deleting
indexed sources (``sources``).

Imports ``store``, ``entity_graph``, ``config``, ``prompts`` and ``support``; never ingestion,
models, nodes, methods or the commands (docs/architecture.md).
"""
