"""Work one 3-hop IRCoT run does along the search path: ``Document`` objects constructed,
``has_collection`` store round trips, and documents sent in ``documents`` updates (the
``updates`` stream), on the demo corpus with fake embeddings and a scripted chat model, so the
numbers are deterministic (no model is loaded):

    nice -n 19 .venv/bin/python bench/document_count.py [--k 4] [--search-cache 0] [--runs 2]

The corpus is ingested into a temporary Milvus Lite store first (not counted); the counts
cover ``graph.stream`` of one question only (``BENCH_WHERE=1`` prints where each
``has_collection`` call came from).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
for _var in [v for v in os.environ if v.startswith("RAG_GRAPHS_")]:
    del os.environ[_var]

QUESTION = "In which town was the founder of the Velmora Institute born?"
REPLIES = [
    "The Velmora Institute was founded by Ilsa Brandt.",
    "Ilsa Brandt was born in Korvik.",
    "So the answer is: Korvik.",
    "Korvik [1].",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--search-cache", type=int, default=1024, help="RagContext.search_cache")
    parser.add_argument("--runs", type=int, default=1, help="runs of the question, one line each")
    args = parser.parse_args()

    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from rag_graphs.config.context import RagContext
    from rag_graphs.ingestion import IngestOptions, ingest
    from rag_graphs.methods import get_graph
    from rag_graphs.store import open_index

    store = str(Path(tempfile.mkdtemp()) / "milvus.db")
    index = open_index(store, "bench", DeterministicFakeEmbedding(size=32))  # the index runs use
    corpus = Path(str(resources.files("rag_graphs").joinpath("demo_corpus")))
    ingest([corpus], index=index, options=IngestOptions(progress=False))
    for _ in range(args.runs):  # a later run: same settings, search cache warm
        ctx = RagContext(
            chat_model=GenericFakeChatModel(messages=iter([AIMessage(content=r) for r in REPLIES])),
            embeddings=index.embeddings,
            store_uri=store,
            collection="bench",
            k=args.k,
            search_cache=args.search_cache,
        )
        print(json.dumps(counted(ctx, index, get_graph("ircot"))))


def counted(ctx: Any, index: Any, graph: Any) -> dict[str, Any]:
    """What one streamed run of ``QUESTION`` constructed, asked and sent."""
    from langchain_core.documents import Document

    counts = {"documents_constructed": 0, "has_collection_calls": 0, "documents_in_updates": 0}
    init, client = Document.__init__, type(index.client)
    has = client.has_collection

    def counting_init(self: Document, *a: Any, **kw: Any) -> None:
        counts["documents_constructed"] += 1
        init(self, *a, **kw)

    def counting_has(self: Any, *a: Any, **kw: Any) -> Any:
        counts["has_collection_calls"] += 1
        if os.environ.get("BENCH_WHERE"):
            import traceback

            print("has_collection", a, "".join(traceback.format_stack(limit=6)[:-1]))
        return has(self, *a, **kw)

    Document.__init__ = counting_init  # type: ignore[method-assign]
    client.has_collection = counting_has  # type: ignore[method-assign]
    try:
        final: dict[str, Any] = {}
        for mode, chunk in graph.stream(
            {"question": QUESTION}, context=ctx, stream_mode=["updates", "values"]
        ):
            if mode == "values":
                final = chunk
                continue
            for update in chunk.values():
                sent = update.get("documents") if isinstance(update, dict) else None
                # a retrieval round sends its hits (main: an Overwrite of every document)
                sent = sent["new"] if isinstance(sent, dict) else getattr(sent, "value", sent)
                counts["documents_in_updates"] += len(sent or [])
    finally:
        Document.__init__ = init  # type: ignore[method-assign]
        client.has_collection = has  # type: ignore[method-assign]
    return counts | {
        "hops": final.get("usage", {}).get("hops"),
        "final_documents": len(final.get("documents", [])),
        "answer": final.get("answer"),
    }


if __name__ == "__main__":
    main()
