"""Ingest throughput (passages per second) and where its time goes, old code against new, with a
row-by-row check that both stored the same thing (issue 47).

A dev corpus's first ``--passages`` passages (HotpotQA by default, read in place from
``../shared/eval``) are written as one text file each (named by the passage's title, the title on
the first line), once, into ``--work``/corpus; each run then ingests that folder with ``ingest()``
into a new Milvus Lite store, with the embedded models (MiniLM, spaCy entities: a new collection
gets its entity graph), in its own process. The models are loaded and warmed before the clock
starts; what is timed is the ``ingest()`` call: convert + chunk + embed + entities + insert + flush.

Stages are timed by wrapping the functions ingest calls (the same names exist in the old and the
new code): ``convert`` and ``chunk`` (the background thread, overlapped with the rest), ``embed``
(the chunks' MiniLM calls, through ``storing._embed``, in whichever thread), ``ner`` (the spaCy
extractor's calls), ``entity_embed`` (MiniLM on new entity names), ``entity_rows`` (the main
thread in ``add_entities`` while no thread embeds names), ``insert`` (``ChunkIndex.add``), ``wait``
(the main thread waiting for a converted file) and ``other`` (the main thread's rest: existence
checks, stale-version deletes, file records, flush); exclusive of nested stages, per thread. Each
run prints torch's thread count in its main thread and in a new thread after the call (what ingest
leaves behind: the process's count, not 1). ``--timeline``: per run, each thread's CPU and stage
second by second (``bench/ingest_timeline.py``).

With ``--old DIR`` (a checkout of the old code; its tree layout must match: ``rag_graphs``,
``ingestion``, ``prompts``) old and new alternate run by run, and every store is compared with the
first run: chunk rows (id, text, every metadata field but ``ingested_at``, which is the clock),
their vectors and the entity rows (key, name, vector, chunk list, count) must be equal, a vector
to within ``TOLERANCE`` a coordinate (how many differ in any bit is printed, also against each side's first).

    nice -n 10 .venv/bin/python bench/ingest_throughput.py --passages 1000 --rounds 2 \\
        --old /tmp/ingest_old --work /tmp/ingest_bench
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.util
import json
import os
import pickle
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

from ingest_timeline import uncovered

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
EVAL = ROOT.parent / "shared" / "eval"
if not EVAL.exists():  # a worktree under /work/wt/<name>
    EVAL = ROOT.parents[1] / "shared" / "eval"
STAGES = ("convert", "chunk", "wait", "embed", "ner", "entity_embed", "entity_rows", "insert", "other")
IGNORED = frozenset({"ingested_at"})
"""Chunk metadata that differs between two ingests of the same files (the clock)."""


# -- the corpus ----------------------------------------------------------------------------------
def write_corpus(folder: Path, dataset: str, count: int) -> int:
    """The dataset's first ``count`` passages, one ``<title>.txt`` each; how many were written."""
    if folder.exists() and len(list(folder.glob("*.txt"))) == count:
        return count
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    seen: set[str] = set()
    written = 0
    with (EVAL / dataset / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            if written >= count:
                break
            passage = json.loads(line)
            title = str(passage.get("title") or passage["id"])
            stem = re.sub(r"[^\w .,()'-]+", "_", title).strip(" .")[:120] or passage["id"]
            while stem.lower() in seen:
                stem += "_"
            seen.add(stem.lower())
            (folder / f"{stem}.txt").write_text(f"{title}\n\n{passage['text']}\n", encoding="utf-8")
            written += 1
    return written


# -- one run (a worker process) ------------------------------------------------------------------
class _Tree(importlib.abc.MetaPathFinder):
    """Import ``rag_graphs`` (and its ``ingestion``/``prompts`` folders) from another checkout,
    ahead of the venv's editable install of this one."""

    def __init__(self, root: Path) -> None:
        self.folders = {
            "rag_graphs": root / "rag_graphs",
            "rag_graphs.ingestion": root / "ingestion",
            "rag_graphs.prompts": root / "prompts",
        }

    def find_spec(self, name, path, target=None):  # noqa: ANN001 - the finder protocol
        folder = self.folders.get(name)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(
            name, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )


class Laps:
    """Exclusive seconds per stage and thread: a stage nested in another is not counted twice.
    ``main`` is the main thread's seconds in any stage (its outermost ones)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.main = 0.0
        self.active: dict[str, int] = {}  # stages running now, in any thread
        self.events: list[tuple[str, str, float, float]] = []  # (thread, stage, start, end), outermost
        self.names: list[tuple[float, float]] = []  # every entity_embed call, any thread, any depth
        self.rows: list[tuple[float, float]] = []  # the main thread's entity_rows calls
        self._local = threading.local()
        self._lock = threading.Lock()

    def wrap(self, stage: str | Callable[[], str], fn: Callable) -> Callable:
        @wraps(fn)
        def timed(*args, **kwargs):
            name = stage() if callable(stage) else stage
            stack = self._local.__dict__.setdefault("stack", [])
            stack.append(0.0)  # seconds of nested stages
            names = self._local.__dict__.setdefault("names", [])
            names.append(name)
            with self._lock:
                self.active[name] = self.active.get(name, 0) + 1
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.perf_counter() - start
                nested = stack.pop()
                names.pop()
                if stack and name != "entity_embed":  # taken out of entity_rows after the run
                    stack[-1] += spent
                with self._lock:
                    self.active[name] -= 1
                    self.seconds[name] = self.seconds.get(name, 0.0) + spent - nested
                    if not stack and threading.current_thread() is threading.main_thread():
                        self.main += spent
                    if not stack:
                        self.events.append((threading.current_thread().name, name, start, start + spent))
                    if name == "entity_embed":
                        self.names.append((start, start + spent))
                    elif name == "entity_rows" and threading.current_thread() is threading.main_thread():
                        self.rows.append((start, start + spent))

        return timed

    def inside(self, stage: str) -> bool:
        """Whether this thread is in ``stage`` now."""
        return stage in self._local.__dict__.get("names", [])


def _dump(index) -> dict[str, Any]:
    """Every chunk row and entity row of the store, by key (vectors as stored)."""
    from rag_graphs.entity_graph.rows import entity_table

    chunks = {r["pk"]: r for batch in index.stored.iterate(["*"]) for r in batch}
    entities = {r["pk"]: r for batch in entity_table(index).iterate(["*"]) for r in batch}
    return {"chunks": chunks, "entities": entities}


def run_worker(args: argparse.Namespace) -> None:
    if args.code:
        sys.meta_path.insert(0, _Tree(Path(args.code).resolve()))
    import torch

    import rag_graphs
    import rag_graphs.ingestion.pipeline as pipeline
    import rag_graphs.ingestion.storing as storing
    from rag_graphs.entity_graph.entities import SpacyExtractor, load_spacy
    from rag_graphs.ingestion import IngestOptions, ingest
    from rag_graphs.store import ChunkIndex, load_embeddings
    from rag_graphs.store.embeddings import chunk_tokenizer

    code = {"rag_graphs": rag_graphs.__file__, "pipeline": pipeline.__file__}
    model = load_embeddings("embedded")
    model.embed_documents(["warm up the model"] * 40)
    load_spacy()("Warm up the pipeline in Paris.")
    chunk_tokenizer("embedded")

    laps = Laps()
    pipeline.convert = laps.wrap("convert", pipeline.convert)
    pipeline.chunk_document = laps.wrap("chunk", pipeline.chunk_document)
    pipeline._prepared = laps.wrap("wait", pipeline._prepared)
    storing.add_entities = laps.wrap("entity_rows", storing.add_entities)
    SpacyExtractor.__call__ = laps.wrap("ner", SpacyExtractor.__call__)
    ChunkIndex.add = laps.wrap("insert", ChunkIndex.add)
    # chunks are embedded through storing._embed (in a thread of their own, and in the main thread
    # too since the pieces), entity names through add_entities' callback: told apart per thread
    storing._embed = laps.wrap("embed", storing._embed)
    kind = type(model)
    kind.embed_documents = laps.wrap(
        lambda: "embed" if laps.inside("embed") else "entity_embed", kind.embed_documents
    )

    store = Path(args.store)
    shutil.rmtree(store.parent, ignore_errors=True)
    store.parent.mkdir(parents=True)
    index = ChunkIndex(uri=str(store), collection="bench", embeddings=model)
    load = os.getloadavg()[0]
    sampler = None
    if args.timeline_out:
        from ingest_timeline import Sampler

        sampler = Sampler()
        sampler.start()
    cpu = time.process_time()
    start = time.perf_counter()
    report = ingest([Path(args.corpus)], index=index, options=IngestOptions(progress=False, entities="auto"))
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    if sampler is not None:
        from ingest_timeline import summary

        sampler.stop()
        Path(args.timeline_out).write_text(json.dumps(summary(sampler, laps.events, start), indent=1))
    if report.failed:
        raise SystemExit(report.summary())
    threads_after = {"main": torch.get_num_threads(), "new thread": _new_thread_count(torch)}
    laps.seconds["other"] = seconds - laps.main
    # entity names are embedded inside add_entities (in this thread, or waited for in another, or both)
    laps.seconds["entity_rows"] = uncovered(laps.rows, laps.names)
    files = len(report.files)
    with open(args.dump, "wb") as out:
        pickle.dump(_dump(index), out)
    print(
        json.dumps(
            {
                "code": code,
                "files": files,
                "chunks": report.total_chunks_in_store,
                "seconds": seconds,
                "cpu_seconds": cpu,
                "passages_per_s": files / seconds,
                "stages": laps.seconds,
                "torch_threads_after": threads_after,
                "load_before": load,
                "load_after": os.getloadavg()[0],
            }
        )
    )


def _new_thread_count(torch: Any) -> int:
    """torch's thread count a thread created now starts on (what ingest left behind)."""
    seen: list[int] = []
    thread = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    thread.start()
    thread.join()
    return seen[0]


# -- comparing two stores ------------------------------------------------------------------------
VECTOR = "dense"
TOLERANCE = 1e-6
"""Largest difference allowed in one coordinate of a stored vector (unit length): torch rounds
short inputs differently on one thread than on two (~3e-7); anything else must be equal. Between
a float32 run and a bf16 one (``store.embed_precision``) vectors differ by up to ~5e-3 in a
coordinate: ``--tolerance 0.01`` then checks the rest (ids, texts, fields, entities) and the
printed ``min_cosine`` says how close the vectors are."""


def differences(
    old: dict[str, Any], new: dict[str, Any], limit: int = 5, tolerance: float = TOLERANCE
) -> tuple[list[str], dict]:
    """Where two dumps differ (at most ``limit`` lines per collection; [] when the same), and per
    collection how many rows' vectors are not bit for bit equal, the largest difference in a
    coordinate and the lowest cosine between a row's two vectors."""
    out: list[str] = []
    drift: dict[str, dict] = {}
    for name in ("chunks", "entities"):
        a, b = old[name], new[name]
        found: list[str] = []
        if set(a) != set(b):
            found.append(f"{name}: {len(set(a) - set(b))} rows only old, {len(set(b) - set(a))} only new")
        unequal, largest, lowest = 0, 0.0, 1.0
        for key in sorted(set(a) & set(b)):
            ra = {k: v for k, v in a[key].items() if k not in IGNORED and k != VECTOR}
            rb = {k: v for k, v in b[key].items() if k not in IGNORED and k != VECTOR}
            if ra != rb and len(found) < limit:
                fields = sorted(k for k in set(ra) | set(rb) if ra.get(k) != rb.get(k))
                found.append(f"{name} {key!r}: fields differ: {', '.join(fields)}")
            va, vb = a[key].get(VECTOR), b[key].get(VECTOR)
            if va != vb:
                unequal += 1
                gap = max(abs(x - y) for x, y in zip(va, vb, strict=True))
                largest = max(largest, gap)
                lowest = min(lowest, sum(x * y for x, y in zip(va, vb, strict=True)))
                if gap > tolerance and len(found) < limit:
                    found.append(f"{name} {key!r}: vector differs by {gap:.2e}")
        drift[name] = {
            "rows": len(a),
            "vectors_not_bitwise_equal": unequal,
            "max_abs_diff": largest,
            "min_cosine": lowest,
        }
        out += found
    return out, drift


# -- the parent: write the corpus, alternate the runs, compare -----------------------------------
def _run(code: Path | None, corpus: Path, work: Path, tag: str, timeline: bool = False) -> tuple[dict, Path]:
    dump = work / f"{tag}.pkl"
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--corpus", str(corpus)]
    command += ["--store", str(work / tag / "milvus.db"), "--dump", str(dump)]
    if timeline:  # per-thread CPU and stages second by second (bench/ingest_timeline.py)
        command += ["--timeline-out", str(work / f"{tag}_timeline.json")]
    if code is not None:
        command += ["--code", str(code)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{tag} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1]), dump


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--passages", type=int, default=1000)
    parser.add_argument("--dataset", default="hotpotqa", help="a folder of ../shared/eval with corpus.jsonl")
    parser.add_argument("--rounds", type=int, default=1, help="runs per side, alternating")
    parser.add_argument("--old", type=Path, help="a checkout of the old code to compare with")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ingest_bench"))
    parser.add_argument("--out", type=Path, help="write the runs as JSON here")
    parser.add_argument("--tolerance", type=float, default=TOLERANCE, help="per vector coordinate")
    parser.add_argument("--timeline", action="store_true", help="write <work>/<run>_timeline.json per run")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--timeline-out", help=argparse.SUPPRESS)
    parser.add_argument("--code", help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    parser.add_argument("--dump", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        run_worker(args)
        return
    corpus = args.work / "corpus"
    count = write_corpus(corpus, args.dataset, args.passages)
    print(f"corpus: {count} passages of {args.dataset} in {corpus}")
    sides: list[tuple[str, Path | None]] = [("new", None)]
    if args.old:
        sides = [("old", args.old.resolve()), ("new", None)]
    runs: list[dict] = []
    reference: dict | None = None
    own: dict[str, dict] = {}  # each side's first store
    for n in range(args.rounds):
        for name, code in sides if n % 2 == 0 else sides[::-1]:
            result, dump = _run(code, corpus, args.work, f"{name}{n}", bool(args.timeline))
            with dump.open("rb") as f:
                stored = pickle.load(f)
            if reference is None:
                reference = stored
                result["identical"] = True
            else:
                diff, result["vectors"] = differences(reference, stored, tolerance=args.tolerance)
                result["identical"] = not diff
                print(f"  vectors against the first run: {result['vectors']}")
                for line in diff:
                    print(f"  DIFFERS ({name}{n} vs the first run): {line}")
            if name in own and own[name] is not reference:  # the same code's runs: bit for bit?
                _, result["vectors_same_side"] = differences(own[name], stored, tolerance=0.0)
                print(f"  vectors against the first {name} run: {result['vectors_same_side']}")
            own.setdefault(name, stored)
            result.update(side=name, round=n)
            runs.append(result)
            split = ", ".join(f"{k} {result['stages'].get(k, 0):.1f}" for k in STAGES)
            print(
                f"{name} round {n}: {result['passages_per_s']:.2f} passages/s ({result['seconds']:.1f} s, "
                f"CPU {result['cpu_seconds']:.1f} s, "
                f"{result['chunks']} chunks, {len(stored['entities'])} entities; load "
                f"{result['load_before']:.1f} -> {result['load_after']:.1f}); same store: "
                f"{result['identical']}; {split}; torch threads after (main, a new thread): "
                f"{tuple(result['torch_threads_after'].values())}; code {result['code']['pipeline']}",
                flush=True,
            )
            dump.unlink()
    for name, _ in sides:
        rates = [r["passages_per_s"] for r in runs if r["side"] == name]
        cpu = [r["cpu_seconds"] / r["files"] for r in runs if r["side"] == name]
        print(
            f"{name}: median {statistics.median(rates):.2f} passages/s, "
            f"{1000 * statistics.median(cpu):.0f} ms of CPU a passage, over {len(rates)} runs"
        )
    if args.out:
        args.out.write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
