"""Re-ingest of an unchanged folder against its first ingest, in ms per file, by folder size.

Issue 41 item 2: re-ingesting 2,500 unchanged files cost 75 ms a file against 21 ms on the first
ingest, and 5,000 did not finish in 21 minutes: every unchanged file was checked against the
collection with its own query, and Milvus answers a filter on ``source`` (a dynamic field) by
reading every row, so the check grew with the collection. For each ``--sizes`` entry this writes
that many small text files (one sentence each, one chunk each) to a new folder, ingests them into
a new Milvus Lite store (first ingest), then ingests the same folder again (every file unchanged)
in the same process, with the index open and the models loaded (their load is not counted).

Embeddings: ``--embeddings fake`` (default) is langchain's ``DeterministicFakeEmbedding`` (32
dimensions, no model: what is measured is discovery, hashing, the store and the pipeline);
``--embeddings embedded`` loads all-MiniLM-L6-v2 from the installed wheel. The entity graph is
off (``entities=None``) unless ``--graph``: spaCy's NER would dominate the first ingest.

Run (a scratch folder; each size gets its own store and folder under it):
    nice .venv/bin/python bench/reingest.py --sizes 1000 5000 10000 --work /tmp/reingest_bench
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def write_folder(folder: Path, count: int) -> None:
    """``count`` small text files, one distinct sentence each (one chunk each)."""
    folder.mkdir(parents=True)
    for i in range(count):
        (folder / f"note{i:06d}.txt").write_text(
            f"Note {i}: the survey boat number {i} reached the northern harbour on day {i % 365}.\n",
            encoding="utf-8",
        )


def measure(count: int, work: Path, embeddings_spec: str, graph: bool) -> dict:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from rag_graphs.ingestion import IngestOptions, ingest
    from rag_graphs.store import ChunkIndex, load_embeddings

    root = work / f"n{count}"
    shutil.rmtree(root, ignore_errors=True)
    write_folder(root / "docs", count)
    model = (
        DeterministicFakeEmbedding(size=32) if embeddings_spec == "fake" else load_embeddings(embeddings_spec)
    )
    index = ChunkIndex(uri=str(root / "milvus.db"), collection="bench", embeddings=model)
    entities = "spacy" if graph else None
    times = {}
    for run in ("first", "again"):
        start = time.perf_counter()
        report = ingest(
            [root / "docs"], index=index, options=IngestOptions(progress=False, entities=entities)
        )
        times[run] = time.perf_counter() - start
        assert not report.failed, report.summary()
    assert len(report.unchanged) == count, report.summary()
    return {
        "files": count,
        "first_s": round(times["first"], 2),
        "first_ms_per_file": round(1000 * times["first"] / count, 2),
        "reingest_s": round(times["again"], 2),
        "reingest_ms_per_file": round(1000 * times["again"] / count, 2),
    }


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument("--work", type=Path, required=True, help="scratch folder (folders and stores)")
    parser.add_argument("--embeddings", default="fake", help="fake (default) or an embedding spec")
    parser.add_argument("--graph", action="store_true", help="build the entity graph (spaCy) too")
    args = parser.parse_args()
    for count in args.sizes:
        print(json.dumps(measure(count, args.work, args.embeddings, args.graph)), flush=True)


if __name__ == "__main__":
    main()
