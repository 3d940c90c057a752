"""Files to chunks: everything between a path (or URL) and the chunks the store embeds.

``discover`` (which files an ingest takes), ``formats`` (sniffing), ``guards`` (refusals before
Docling runs), ``documents`` (hand-built documents), ``converter`` (Docling in process),
``workers`` (a worker process with a per-file timeout), ``serve`` (Docling Serve), ``urls`` (web
pages), ``entry`` (``convert``: one file to a ``DoclingDocument``), ``captioning`` (picture
descriptions) and ``chunking`` (text, table and picture chunks).

May import ``prompts`` and ``rag_graphs.support.redaction``; never the store, the graph or ``rag_graphs``.
Nothing is imported here: ``rag_graphs.ingestion.convert.entry.formats`` must not load Docling.
"""
