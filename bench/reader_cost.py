"""Milliseconds per ``read`` of this tree's reader against an earlier commit's, in one process,
question by question (issue 51: ``reader=extract`` < 50 ms a question beside retrieval).

Each question's distractor passages (``bench/reader_fit.py``: gold first, then the others, top 5)
are read by both readers in turn (which goes first alternates), each with its own parse cache
emptied before the question, so every read parses its passages cold, as a run's final answer
does. Timed without an embedder and with MiniLM (the node passes the run's embedder), MiniLM twice:
with the question new to it, and with the question embedded as a query first, untimed, as a
run's dense search does before its answer (``LocalEmbeddings`` keeps query vectors, so the
reader's call then embeds its sentences only, whichever reader makes it): wall clock and this
process's CPU time (all its threads: torch's too). The load of a shared machine
moves both readers alike; compare the two columns, not the absolute times with another run.
``--repeat 3`` reads each question three times per reader (the two still alternating) and keeps
each reader's quickest: a loaded machine's stalls drop out, and spaCy's vocabulary then knows the
question's words (its first read of a word costs a lexeme, ~9 ms a question).
``--torch-threads 1`` runs MiniLM on one thread: on a loaded 2-core machine torch's two threads
wait on each other and one call costs ~25x its single-thread time (BENCHMARKS.md, round 3).

    PYTHONPATH=. nice -n 10 .venv/bin/python bench/reader_cost.py --old 788d405 --limit 20
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import reader_demo  # noqa: E402
import reader_fit  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--old", default="de5ea8c")
    parser.add_argument("--limit", type=int, default=20, help="questions per dataset")
    parser.add_argument("--torch-threads", type=int, default=0, help="torch's threads (0: its default)")
    parser.add_argument("--no-embedder", action="store_true", help="time without an embedder only")
    parser.add_argument(
        "--repeat", type=int, default=1, help="reads of each question per reader, the quickest kept"
    )
    args = parser.parse_args()
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)

    from langchain_core.documents import Document

    from rag_graphs.store.embeddings import load_embeddings
    from rag_graphs.text import reader as new

    old = reader_demo.old_reader(args.old, Path(tempfile.mkdtemp(prefix="old_reader_")))
    old_candidates = sys.modules["old_reader.candidates"]
    from rag_graphs.text import candidates as new_candidates

    data = reader_fit.eval_dir()
    questions = [
        (row["question"], reader_fit.documents(row, "distractor"))
        for name in reader_fit.DATASETS
        for row in reader_fit.load_rows(data, name)[: args.limit]
    ]
    embeddings = load_embeddings()
    warm = [Document(page_content="Warm up.", metadata={})]
    for module in (old, new):
        module.read("warm up?", warm, embeddings=embeddings)
    readers = {"old": (old, old_candidates), "new": (new, new_candidates)}
    settings = [(None, "without an embedder", False)] + (
        []
        if args.no_embedder
        else [
            (embeddings, "with MiniLM, the question new to it", False),
            (embeddings, "with MiniLM, the question embedded by retrieval first", True),
        ]
    )
    for model, label, retrieved in settings:
        times: dict[str, list[float]] = {"old": [], "new": []}
        cpu: dict[str, list[float]] = {"old": [], "new": []}
        answers_differ = 0
        for i, (question, docs) in enumerate(questions):
            got, took = {}, {"old": [], "new": []}
            for turn in range(i * args.repeat, (i + 1) * args.repeat):
                for name in ("old", "new") if turn % 2 == 0 else ("new", "old"):
                    got[name] = _timed(readers[name], question, docs, model, retrieved, took[name])
            for name, pairs in took.items():
                wall, used = min(pairs)  # the quietest of the repeats
                times[name].append(wall)
                cpu[name].append(used)
            answers_differ += got["old"] != got["new"]
        print(
            f"{label}, {len(questions)} questions: "
            + "; ".join(
                f"{name} median {statistics.median(t):.1f} ms, mean {statistics.fmean(t):.1f}"
                f" (CPU median {statistics.median(cpu[name]):.1f}, mean {statistics.fmean(cpu[name]):.1f})"
                for name, t in times.items()
            )
            + f"; answers differ on {answers_differ}",
            flush=True,
        )


def _timed(reader, question: str, docs, model, retrieved: bool, took: list[tuple[float, float]]) -> str:
    """One cold read of ``question`` by ``reader`` (its module and candidates module): its answer;
    (wall, CPU) ms appended to ``took``."""
    module, candidates = reader
    candidates._CACHE.clear()
    if hasattr(module, "_VECTORS"):  # sentence vectors kept by text (bac2ce1 on)
        module._VECTORS.vectors.clear()
    if model is not None:  # query vectors kept by the embedder (issue 51 round 6 on)
        getattr(model, "_queries", {}).clear()
        if retrieved:  # a run's dense search embedded the question, untimed here
            model.embed_query(question)
    started, started_cpu = time.perf_counter(), time.process_time()
    answer = module.read(question, docs, embeddings=model).answer
    took.append((1000 * (time.perf_counter() - started), 1000 * (time.process_time() - started_cpu)))
    return answer


if __name__ == "__main__":
    main()
