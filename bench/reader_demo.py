"""The demo's two questions through every method, answered by the reader of this tree and by the
reader of an earlier commit, over the same retrieval (issue 51: the demo's answers).

``rag-graphs demo`` runs each method once per question; the methods' searches and SmolLM2 calls
are most of its time and do not depend on the reader (it reads the final ``documents`` once).
This runs each method once per question on the demo store, takes the answer the run's reader
(this tree's) wrote, and reads the passages that answer read (the method's ``evidence`` when it
selected some, as RAG-Fusion and CRAG do, else its final ``documents``) with the earlier commit's reader
(its five ``rag_graphs/text`` reader modules, loaded as a package of their own from
``git show``), with the same embedder. So "before" and "after" differ only by the reader.

Run (from the repository root, after `rag-graphs demo --store S` built S, or any ingest of the
demo corpus with its entity graph, RAPTOR tree and community reports):
    PYTHONPATH=. nice -n 10 .venv/bin/python bench/reader_demo.py --store .rag-graphs/demo.db --old de5ea8c
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
MODULES = ("reader", "candidates", "reader_features", "answer_types", "comparisons", "roles")
"""The reader's modules under ``rag_graphs/text`` (a commit without one of them is read without it)."""


def _show(rev: str, path: str) -> str:
    """The text of ``path`` at commit ``rev``."""
    command = ["git", "-C", str(ROOT), "show", f"{rev}:{path}"]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def old_reader(rev: str, into: Path):
    """The reader of commit ``rev`` as the package ``old_reader`` (imports and weights its own)."""
    package = into / "old_reader"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "reader_weights.json").write_text(_show(rev, "rag_graphs/data/reader_weights.json"))
    for name in MODULES:
        try:
            text = _show(rev, f"rag_graphs/text/{name}.py")
        except subprocess.CalledProcessError:  # not there yet at ``rev``
            continue
        for other in MODULES:
            text = text.replace(f"rag_graphs.text.{other} ", f"old_reader.{other} ")
        text = text.replace(
            'Path(__file__).parents[1] / "data" / "reader_weights.json"',
            'Path(__file__).parent / "reader_weights.json"',
        )
        (package / f"{name}.py").write_text(text)
    sys.path.insert(0, str(into))
    return importlib.import_module("old_reader.reader")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--store", required=True)
    parser.add_argument("--old", default="de5ea8c", help="the commit whose reader is 'before'")
    parser.add_argument("--methods", default="", help="comma-separated (default: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench_runs" / "reader_demo.json")
    parser.add_argument("--two-hop-only", action="store_true", help="skip the four-hop question")
    args = parser.parse_args()

    from rag_graphs.catalog import METHODS
    from rag_graphs.cli import demo
    from rag_graphs.config.context import RagContext
    from rag_graphs.eval.metrics import answer_contained
    from rag_graphs.run import run
    from rag_graphs.search.retrieval import embeddings_for
    from rag_graphs.text.answers import short_answer

    before = old_reader(args.old, Path(tempfile.mkdtemp(prefix="old_reader_")))
    ctx = RagContext(store_uri=args.store, max_answer_tokens=demo.ANSWER_TOKENS)
    embeddings = embeddings_for(ctx)
    methods = [m for m in args.methods.split(",") if m] or list(METHODS)
    rows = []
    questions = (demo.TWO_HOP,) if args.two_hop_only else (demo.FOUR_HOP, demo.TWO_HOP)
    for question in questions:
        for method in methods:
            began = time.monotonic()
            result = run(method, question.text, ctx)
            evidence = result.get("evidence")  # what the answer read (``nodes.inputs.answer_documents``)
            docs = list(evidence if evidence is not None else result.get("documents", []))
            old = before.read(question.text, docs, embeddings=embeddings) if docs else None
            new = short_answer(str(result.get("answer", "")))
            row = {
                "question": question.text,
                "method": method,
                "files": sorted(demo.retrieved_files(result)),
                "found": any(answer_contained(d.page_content, [question.gold]) for d in docs),
                "answer_chunk": any(  # the chain's last file's chunk that holds the gold
                    Path(str(d.metadata.get("source", ""))).name == question.chain[-1]
                    and answer_contained(d.page_content, [question.gold])
                    for d in docs
                ),
                "before": old.answer if old is not None else "",
                "before_abstained": bool(old is None or old.no_evidence),
                "after": new,
                "after_outcome": str(result.get("outcome", "")),
                "before_right": bool(old is not None and answer_contained(old.answer, [question.gold])),
                "after_right": bool(answer_contained(new, [question.gold])),
                "seconds": round(time.monotonic() - began, 1),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1))
    for question in questions:
        mine = [r for r in rows if r["question"] == question.text]
        print(
            f"{question.text} (gold {question.gold}): {len(mine)} methods; gold in a retrieved passage "
            f"{sum(r['found'] for r in mine)}, the answer's chunk {sum(r['answer_chunk'] for r in mine)}; "
            f"right before {sum(r['before_right'] for r in mine)}, "
            f"after {sum(r['after_right'] for r in mine)}; "
            f"abstained before {sum(r['before_abstained'] for r in mine)}, "
            f"after {sum(r['after_outcome'] == 'no_evidence' for r in mine)}"
        )


if __name__ == "__main__":
    main()
