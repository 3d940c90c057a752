"""Mine DRAG/IterDRAG demonstrations from a labelled set: keep what the model gets right.

Each candidate question is retrieved for and answered (naive RAG, same
store and model as the run that will use the demonstrations); the ones whose
answer contains a gold answer become demonstrations with their retrieved
documents and the gold answer. Mine from questions you will not evaluate on
(``offset`` past your evaluation sample), or the scores leak.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from tqdm.auto import tqdm

from rag_graphs.context import RagContext
from rag_graphs.eval.corpus import open_corpus
from rag_graphs.eval.datasets import Dataset, load_dataset
from rag_graphs.eval.metrics import answer_contained
from rag_graphs.methods import get_graph
from rag_graphs.retrieval import embeddings_for


def mine_demonstrations(
    dataset: str | Path | Dataset,
    out: str | Path,
    *,
    context: RagContext | None = None,
    offset: int = 0,
    limit: int = 50,
    keep: int = 8,
    eval_store: str = ".rag-graphs/eval.db",
    progress: bool = True,
) -> int:
    """Write up to ``keep`` correct demonstrations from ``examples[offset:offset+limit]``; return how many."""
    path = Path(out).expanduser().resolve()
    if path.is_dir():  # checked before any question is asked
        raise ValueError(f"demonstrations output must be a file, {path} is a folder")
    ds = dataset if isinstance(dataset, Dataset) else load_dataset(dataset)
    ctx = context or RagContext()
    if ds.has_passages:
        index = open_corpus(ds, eval_store, embeddings_for(ctx), ctx.embeddings)
        ctx = dataclasses.replace(ctx, store_uri=index.uri, collection=index.collection)
    naive = get_graph("naive")
    kept = []
    candidates = ds.examples[offset : offset + limit]
    for example in tqdm(candidates, desc="mining demonstrations", disable=not progress):
        result = naive.invoke({"question": example.question}, context=ctx)
        if answer_contained(result.get("answer", ""), example.golds):
            docs = [d.page_content for d in result.get("documents", [])]
            kept.append({"question": example.question, "answer": example.answer, "documents": docs})
            if len(kept) >= keep:
                break
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in kept), encoding="utf-8")
    return len(kept)
