"""Mine DRAG/IterDRAG demonstrations from a labelled set: keep what the run gets right.

Each candidate question is retrieved for and answered (naive RAG, same
store and model as the run that will use the demonstrations). With
``require="answer"`` (Yue et al. 2024) the ones whose answer contains a gold answer
become demonstrations; with ``require="evidence"`` the ones whose retrieved
documents hold every gold passage (for a model too small to answer, whose
demonstrations still need documents that support the gold answer). A demonstration
keeps the retrieved documents and the gold answer, and, where the set has a gold
decomposition (MuSiQue), its chain of follow-ups and intermediate answers for
IterDRAG (``chains=True`` keeps only such questions). Mine from questions you will
not evaluate on (``offset`` past your evaluation sample), or the scores leak.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Literal

from rag_graphs.config.context import RagContext
from rag_graphs.eval.corpus import PASSAGE_FIELD, open_corpus
from rag_graphs.eval.datasets import Dataset, load_dataset
from rag_graphs.eval.metrics import answer_contained
from rag_graphs.methods import get_graph
from rag_graphs.search.retrieval import embeddings_for
from rag_graphs.support.progress import progress_bar
from rag_graphs.text.demonstrations import MAX_DOCS


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
    require: Literal["answer", "evidence"] = "answer",
    chains: bool = False,
    max_documents: int = MAX_DOCS,
) -> int:
    """Write up to ``keep`` demonstrations from ``examples[offset:offset+limit]`` (see the
    module docstring for ``require`` and ``chains``); return how many. A demonstration keeps
    its run's first ``max_documents`` documents (those a prompt shows)."""
    path = Path(out).expanduser().resolve()
    if path.is_dir():  # checked before any question is asked
        raise ValueError(f"demonstrations output must be a file, {path} is a folder")
    ds = dataset if isinstance(dataset, Dataset) else load_dataset(dataset)
    ctx = context or RagContext()
    if ds.has_passages:
        index = open_corpus(ds, eval_store, embeddings_for(ctx), ctx.embeddings)
        ctx = dataclasses.replace(ctx, store_uri=index.uri, collection=index.collection)
    naive = get_graph("naive")
    if require not in ("answer", "evidence"):
        raise ValueError(f"require must be 'answer' or 'evidence', not {require!r}")
    kept: list[dict] = []
    candidates = [e for e in ds.examples[offset : offset + limit] if e.chain or not chains]
    for example in progress_bar(candidates, desc="mining demonstrations", disable=not progress):
        result = naive.invoke({"question": example.question}, context=ctx)
        documents = result.get("documents", [])[:max_documents]
        if require == "answer":
            right = answer_contained(result.get("answer", ""), example.golds)
        else:
            # a piece of a long passage counts as its passage
            found = {str(i) for d in documents for i in (d.id, d.metadata.get(PASSAGE_FIELD)) if i}
            right = bool(example.supporting_ids) and set(example.supporting_ids) <= found
        if right:
            row: dict = {"id": example.id, "question": example.question, "answer": example.answer}
            row["documents"] = [d.page_content for d in documents]
            if example.chain:
                row["chain"] = [{"follow_up": q, "intermediate_answer": a} for q, a in example.chain]
            kept.append(row)
            if len(kept) >= keep:
                break
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in kept), encoding="utf-8")
    return len(kept)
