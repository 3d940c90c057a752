"""The entity-graph build (``build_graph``: ``rag-graphs graph``, every evaluator store's graph),
old code against new, alternating, on copies of one store (issue 47, round 7).

A dev corpus's first ``--passages`` chunks (the evaluator's own ``passage_documents``) are stored
once with ``index.add`` in ``--work``/source (no entities); each run copies that store and calls
``build_graph(index, SpacyExtractor(), progress=False)`` on the copy in its own process, the
models loaded and warmed before the clock, importing ``rag_graphs`` from ``--old`` (a checkout of
the old code) or from this tree. Printed per run: wall and CPU seconds and the build's own report.

    PYTHONPATH=. .venv/bin/python bench/graph_build.py --passages 2000 --rounds 2 \\
        --old bench_runs/s16/old_main --work bench_runs/s16/gb
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
EVAL = ROOT.parent / "shared" / "eval"
if not EVAL.exists():  # a worktree under /work/wt/<name>
    EVAL = ROOT.parents[1] / "shared" / "eval"
COLLECTION = "graph_build"


def make_source(store: Path, dataset: str, passages: int) -> None:
    """The first ``passages`` chunks of the dataset, embedded and stored without entities."""
    from rag_graphs.eval.corpus import passage_documents
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.store.embeddings import load_embeddings
    from rag_graphs.store.index import ChunkIndex

    data = load_dataset(EVAL / dataset)
    docs = []
    for passage in data.passages():
        docs += passage_documents(passage, data)
        if len(docs) >= passages:
            break
    store.parent.mkdir(parents=True, exist_ok=True)
    index = ChunkIndex(uri=str(store), collection=COLLECTION, embeddings=load_embeddings("embedded"))
    for start in range(0, passages, 256):
        index.add(docs[start : min(start + 256, passages)])
    index.flush()


def run_build(source: Path, copy: Path) -> str:
    """``build_graph`` on a fresh copy of ``source``; one line of what it took."""
    import rag_graphs
    from rag_graphs.entity_graph.build import build_graph
    from rag_graphs.entity_graph.entities import SpacyExtractor
    from rag_graphs.store.embeddings import load_embeddings
    from rag_graphs.store.index import ChunkIndex

    shutil.rmtree(copy.parent, ignore_errors=True)
    shutil.copytree(source.parent, copy.parent)
    model = load_embeddings("embedded")
    extractor = SpacyExtractor()
    extractor(["warm up"])
    model.embed_documents(["warm up"] * 40)
    index = ChunkIndex(uri=str(copy), collection=COLLECTION, embeddings=model)
    cpu, start = time.process_time(), time.perf_counter()
    report = build_graph(index, extractor, progress=False)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return f"wall {wall:.1f} s, CPU {cpu:.1f} s; {report.summary()}; code {Path(rag_graphs.__file__).parent}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", default="hotpotqa")
    parser.add_argument("--passages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2, help="runs per side, alternating")
    parser.add_argument("--old", type=Path, help="a checkout of the old code to compare with")
    parser.add_argument("--work", type=Path, default=Path("/tmp/graph_build_bench"))
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(run_build(Path(args.worker[0]), Path(args.worker[1])), flush=True)
        return
    source = args.work / "source" / "milvus.db"
    if not source.exists():
        make_source(source, args.dataset, args.passages)
    sides = [("old", args.old), ("new", ROOT)] if args.old else [("new", ROOT)]
    for round_ in range(args.rounds):
        for name, code in sides if round_ % 2 == 0 else sides[::-1]:
            copy = args.work / f"{name}{round_}" / "milvus.db"
            env = {**os.environ, "PYTHONPATH": str(code.resolve())}
            worker = [sys.executable, __file__, "--worker", str(source), str(copy)]
            line = subprocess.run(worker, env=env, check=True, capture_output=True, text=True).stdout
            print(f"{name} round {round_}: {line.strip()}", flush=True)


if __name__ == "__main__":
    main()
