"""The one retrieval path a node runs (``retrieval``: the store, filters, graph and sentence
search, one search plan per settings), searching through the caches (``cached``), the user's
own retriever (``own``), fusion of rankings (``fusion``), the search caches
(``cache``, ``disk_cache``), reranking (``rerank``), compression (``compress``), neighbour
expansion of hits (``neighbours``) and naming or deleting indexed sources (``sources``).

May import ``ingestion``, ``prompts``, ``rag_graphs.state`` and ``rag_graphs.config``; never
nodes, methods or the commands.
"""
