"""Store contention inside one process: many concurrent runs share one Milvus client safely.

(Two *processes* on one Milvus Lite path: ``test_store.py::test_second_process_gets_a_clear_lock_error``.)
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

import rag_graphs.store.index as store_index
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.methods import get_graph

N = 48
"""Parallel ``ainvoke``s in the load test: 12 per method, 4 methods, two tenants."""
METHODS = ("naive", "multi_query", "rag_fusion", "iterative")


def test_parallel_ainvokes_share_one_client_and_never_mix_results(demo_corpus, index, make_context, tmp_path):
    ingest([demo_corpus], index=index, options=IngestOptions(tenant="acme", progress=False))
    other = tmp_path / "globex"
    other.mkdir()
    (other / "ilsa.md").write_text("# Ilsa Brandt\n\nIlsa Brandt of Globex was born in Zurich.\n")
    ingest([other], index=index, options=IngestOptions(tenant="globex", progress=False))

    def context(i: int):
        reply = AIMessage(content=f"Answer {i} [1].")
        model = GenericFakeChatModel(messages=itertools.repeat(reply))
        return make_context(chat_model=model, tenant=("acme", "globex")[i % 2], k=3, max_hops=2)

    async def run_all():
        runs = [
            get_graph(METHODS[i % len(METHODS)]).ainvoke(
                {"question": "Where was Ilsa Brandt born?"}, context=context(i)
            )
            for i in range(N)
        ]
        return await asyncio.gather(*runs)

    outs = asyncio.run(run_all())
    assert len(outs) == N
    for i, out in enumerate(outs):
        assert out["answer"] == f"Answer {i} [1]."  # each run got its own model's reply
        tenant = ("acme", "globex")[i % 2]
        assert out["documents"] and {d.metadata["tenant"] for d in out["documents"]} == {tenant}
        assert out["usage"]["retrievals"] >= 1
    opened = [key for key in store_index._OPEN if key[0] == str(Path(index.uri).resolve())]
    assert len(opened) == 1  # one shared client served all N runs
