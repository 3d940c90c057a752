"""Build (or resume) the sentence rows (graph search's facts) of one bench store's graph collection, timed.

    .venv/bin/python bench/graph_facts_build.py musique /work/stores/gb_musique.db --embed-timing

``--embed-timing`` first embeds the dataset's passages once (not stored), so that the sentence
build can be set against the passage-embedding time under the same load. One JSON line per run
is appended to ``bench_runs/facts_build.jsonl``. ``build_sentences`` skips rows already stored, so
a stopped build resumes.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dataset")
    parser.add_argument("store")
    parser.add_argument("--variant", default="ner_title")
    parser.add_argument("--embed-timing", action="store_true", help="time embedding the passages first")
    args = parser.parse_args()

    from rag_graphs.eval.corpus import collection_name, corpus_documents
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.store import load_embeddings, open_index
    from rag_graphs.store.sentences import build_sentences

    embeddings = load_embeddings("embedded")
    dataset = load_dataset(EVAL / args.dataset)
    graph = open_index(args.store, f"{collection_name(dataset, 'embedded')}_{args.variant}", embeddings)
    out: dict = {"dataset": args.dataset, "chunks": graph.count()}
    if args.embed_timing:
        texts = [d.page_content for d in corpus_documents(dataset)]
        embeddings.embed_documents(texts[:50])  # model load
        start = time.perf_counter()
        embeddings.embed_documents(texts)
        out["embed_seconds"] = time.perf_counter() - start
    start = time.perf_counter()

    def progress(chunks: int, sentences: int) -> None:
        print(f"{time.perf_counter() - start:.0f}s chunks {chunks} sentences {sentences}", flush=True)

    report = build_sentences(graph, progress=progress)
    out.update(sentence_seconds=time.perf_counter() - start, sentences=report.sentences, added=report.added)
    print(json.dumps(out), flush=True)
    (ROOT / "bench_runs").mkdir(exist_ok=True)
    with open(ROOT / "bench_runs" / "facts_build.jsonl", "a") as fh:
        fh.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
