"""One store holding the four eval corpora together: graph search as it grows, and distractor cost.

Issue 28 item 5. The passages of ``hotpotqa``, ``musique``, ``2wikimultihopqa`` and
``2wikimultihopqa_hippocorpus`` (read in place under ``../shared/eval``, never copied) go into
ONE Milvus Lite collection, in a fixed seeded-shuffled order across the four, in steps (1k, 3k,
10k, then all). Passage ids are already prefixed by dataset (``hotpot-``, ``musique-``, ``2wiki-``,
``2wikiH-``) and never collide; a passage whose title and text equal one already stored (419 of
21,765: 408 shared by the two 2Wiki corpora, 9 MuSiQue / HotpotQA, 2 2Wiki-hippocorpus /
MuSiQue) is stored once, under the id of the first corpus in ``DATASETS`` order, and every
dataset's gold ids are mapped to the stored id (an identical copy is the same evidence, not a
distractor): 21,346 passages are stored.

At each step, in this one process (so machine load and model loading mostly cancel):

* ``embed``: embedding the new passages (``embed_documents``, the collection's model);
* ``insert``: writing them with those vectors, then a flush;
* ``build``: ``build_graph`` on the store; it skips chunks that carry entities already, so each
  step annotates only the new passages (incremental). Until 2026-11-25 its closing
  ``repair_entities`` pass read every chunk's entities and their entity rows, so that part grew
  with the whole store (the recorded rows include it); it now runs only on ``repair=True``;
* latency over a fixed sample of questions (``--sample`` from each dataset, all halves), warm:
  dense and hybrid search (k=5) and graph search as users run it, with
  ``GraphSearchOptions(keep_first=1, keep_in_top=2)`` (``RagContext().graph_search``: hybrid's
  top kept, the rest at the defaults; ``--unprotected``: both 0), with the median lap timings of
  ``GraphHits.milliseconds``.

On the full store, every dataset's CHECK-half questions (``rag_graphs.eval.halves``) are scored
by supporting-passage R@2 / R@5 for hybrid (k=5) and graph search.

Run (the store is ``.rag-graphs/mixed.db``; rows go to ``bench/results/mixed_store.json``):
    .venv/bin/python bench/mixed_store.py                 # grow the store, time, score
    .venv/bin/python bench/mixed_store.py --plot-only     # redraw the plot, print the tables
A re-run on a grown store skips the steps already stored (their rows are kept) and measures
what is left (and scores again; ``--score D ...`` only those datasets); ``--fresh`` drops the
collection first; ``--clean-copy`` also times dense and hybrid search on a never-upserted copy.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import statistics
import subprocess
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from graph_retrieval import recall  # bench/ is this script's own directory on sys.path

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval"
if not EVAL.exists():  # a worktree under /work/wt/<name>
    EVAL = ROOT.parents[1] / "shared" / "eval"
RESULTS = ROOT / "bench" / "results"
DATASETS = ["hotpotqa", "musique", "2wikimultihopqa", "2wikimultihopqa_hippocorpus"]
STEPS = [1000, 3000, 10000]
COLLECTION = "mixed_eval"
OWN_CHECK = {  # own-corpus store, check half, this graph setting: (hybrid R@2, R@5), (graph R@2, R@5)
    # BENCHMARKS.md "Title edges and BM25 without function words" (round 5: BM25 asked content
    # words, graph_title_weight=5): bench/graph_retrieval.py --split check --modes hybrid graph
    #   --set keep_first=1 --set keep_in_top=2 --set fuse_mode=hybrid --set title_weight=5,
    # each dataset on its own store (2026-11-24). Round 2's figures are in that section's tables.
    "musique": ((41.1, 53.4), (49.8, 68.4)),
    "2wikimultihopqa_hippocorpus": ((56.8, 68.8), (74.6, 90.7)),
    "hotpotqa": ((60.8, 77.5), (69.0, 88.6)),
    "2wikimultihopqa": ((62.1, 72.8), (72.8, 91.1)),
}
BATCH = 256


def mixed_passages(datasets: dict, seed: int) -> tuple[list, dict[str, str], dict]:
    """Every distinct passage once, as ``(dataset, passage)`` in a seeded shuffle; the map from each
    passage id to the stored id (an identical title + text keeps the first corpus's id); counts."""
    stored: dict[tuple[str, str], str] = {}
    alias: dict[str, str] = {}
    order = []
    counts = {"passages": 0, "duplicates": {}}
    for name, dataset in datasets.items():
        for passage in dataset.passages():
            counts["passages"] += 1
            key = (str(passage.get("title") or ""), passage["text"])
            if key in stored:
                alias[passage["id"]] = stored[key]
                first = stored[key].split("-")[0]
                pair = f"{name} = {first}"
                counts["duplicates"][pair] = counts["duplicates"].get(pair, 0) + 1
                continue
            stored[key] = alias[passage["id"]] = passage["id"]
            order.append((name, passage))
    random.Random(seed).shuffle(order)
    counts["stored"] = len(order)
    return order, alias, counts


def load_average() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def latency(index, questions: list[str], options, warmup: list[str]) -> dict:
    """Warm p50 / p90 (ms) of dense, hybrid and graph search, and graph search's median laps."""
    from rag_graphs.entity_graph.graph_search import graph_search

    runs = {
        "dense": lambda q: index.search(q, k=5, mode="dense"),
        "hybrid": lambda q: index.search(q, k=5, mode="hybrid"),
        "graph": lambda q: graph_search(index, q, k=5, options=options),
    }
    out: dict = {}
    laps: dict[str, list[float]] = {}
    sizes: list[int] = []
    for name, run in runs.items():
        for q in warmup:
            run(q)
        ms = []
        for q in questions:
            start = time.perf_counter()
            found = run(q)
            ms.append((time.perf_counter() - start) * 1000)
            if name == "graph":
                for lap, value in found.milliseconds.items():
                    laps.setdefault(lap, []).append(value)
                sizes.append(found.chunks + found.entities)
        out[name] = {"p50": statistics.median(ms), "p90": percentile(ms, 90), "mean": statistics.mean(ms)}
    out["graph_laps_p50"] = {lap: statistics.median(v) for lap, v in laps.items()}
    out["graph_nodes_p50"] = statistics.median(sizes) if sizes else 0
    return out


def score(index, examples, alias: dict[str, str], options, own: set[str] | None = None) -> dict:
    """R@2 / R@5 (%) of hybrid (k=5) and graph search over ``examples``, gold ids mapped to stored ids;
    with ``own`` (the stored ids of the questions' corpus), the share of top-5 hits from other corpora."""
    from rag_graphs.entity_graph.graph_search import graph_search

    runs = {
        "hybrid": lambda q: [str(d.id) for d, _ in index.search(q, k=5, mode="hybrid")],
        "graph": lambda q: [str(d.id) for d, _ in graph_search(index, q, k=5, options=options).hits],
    }
    out = {}
    for name, run in runs.items():
        r2, r5, ms, foreign, by_corpus = [], [], [], [], {}
        for example in examples:
            gold = tuple(dict.fromkeys(alias.get(g, g) for g in example.supporting_ids))
            start = time.perf_counter()
            ranked = run(example.question)
            ms.append((time.perf_counter() - start) * 1000)
            r2.append(recall(ranked, gold, 2))
            r5.append(recall(ranked, gold, 5))
            if own is not None:
                foreign.append(sum(cid not in own for cid in ranked[:5]) / max(len(ranked[:5]), 1))
                for cid in ranked[:5]:
                    if cid not in own:  # the id prefix names the corpus (hotpot-, musique-, 2wiki-, 2wikiH-)
                        prefix = cid.split("-")[0]
                        by_corpus[prefix] = by_corpus.get(prefix, 0) + 1
        out[name] = {
            "R@2": 100 * statistics.mean(r2),
            "R@5": 100 * statistics.mean(r5),
            "p50": statistics.median(ms),
            **({"foreign_top5": 100 * statistics.mean(foreign)} if foreign else {}),
            **({"foreign_hits_by_corpus": by_corpus} if foreign else {}),
            "per_question": {e.id: [a, b] for e, a, b in zip(examples, r2, r5, strict=True)},
        }
    return out


def clean_copy_latency(index, questions: list[str], warmup: list[str], rounds: int = 2) -> dict:
    """Dense and hybrid p50 (ms) on the graph-built collection and on a copy of it written once
    (same rows and vectors, never upserted), alternated in one process so load cancels:
    ``build_graph`` rewrites every chunk row (a partial upsert) to add its entities."""
    from rag_graphs.store import open_index

    clean = open_index(index.uri, f"{index.collection}_clean", index.embeddings)
    if clean.count() < index.count():
        rows = index.iter_chunks()
        for doc, _ in rows:
            doc.metadata["chunk_id"] = doc.id
        for i in range(0, len(rows), 1000):
            part = rows[i : i + 1000]
            clean.add([d for d, _ in part], vectors=[v for _, v in part])
        clean.flush()
    out: dict = {}
    for r in range(rounds):
        for name, coll in (("graph-built", index), ("written once", clean)):
            for mode in ("dense", "hybrid"):
                for q in warmup:
                    coll.search(q, k=5, mode=mode)
                ms = []
                for q in questions:
                    start = time.perf_counter()
                    coll.search(q, k=5, mode=mode)
                    ms.append((time.perf_counter() - start) * 1000)
                out.setdefault(f"{name} {mode}", []).append(statistics.median(ms))
        print(f"clean copy round {r}: {json.dumps(out)}", flush=True)
    return out


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [r["passages"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for mode, style in (("graph", "o-"), ("hybrid", "s--"), ("dense", "^:")):
        left.plot(n, [r["latency"][mode]["p50"] for r in rows], style, label=f"{mode} p50")
    left.plot(n, [r["latency"]["graph"]["p90"] for r in rows], "o-", alpha=0.35, label="graph p90")
    left.axhline(100, color="grey", lw=0.8, ls="-.", label="100 ms bar")
    left.set(xscale="log", xlabel="passages in the store (log)", ylabel="ms per search (warm)")
    left.set_title("search latency as the mixed store grows")
    left.legend(fontsize=8)
    right.plot(n, [r["cumulative"]["build"] for r in rows], "o-", label="graph build (cumulative)")
    right.plot(n, [r["cumulative"]["embed"] for r in rows], "s--", label="embed passages (cumulative)")
    right.plot(
        n, [1.5 * r["cumulative"]["embed"] for r in rows], color="grey", lw=0.8, ls="-.", label="1.5x embed"
    )
    right.set(xscale="log", yscale="log", xlabel="passages in the store (log)", ylabel="seconds")
    right.set_title("graph build against embedding")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def tables(saved: dict) -> str:
    """The markdown tables of BENCHMARKS.md from the saved rows."""
    lines = [
        "| passages | entities | embed (s) | insert (s) | graph build (s) | build / embed (cumulative) "
        "| this step: extract / entity rows / chunk writes / repair+flush (s) "
        "| p50 / p90 dense | p50 / p90 hybrid | p50 / p90 graph | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in saved["steps"]:
        c, parts, lat = r["cumulative"], r["build_parts"], r["latency"]
        split_parts = " / ".join(
            f"{parts[k]:.0f}" for k in ("extract", "entity_rows", "chunk_writes", "repair_and_flush")
        )
        cells = " | ".join(
            f"{lat[m]['p50']:.0f} / {lat[m]['p90']:.0f} ms" for m in ("dense", "hybrid", "graph")
        )
        lines.append(
            f"| {r['passages']:,} | {r['entities']:,} | {c['embed']:.0f} | {c['insert']:.0f} "
            f"| {c['build']:.0f} "
            f"| {r['build_over_embed']:.2f}x | {split_parts} | {cells} | {r['load_start']}-{r['load_end']} |"
        )
    lines += [
        "",
        "| passages | " + " | ".join(saved["steps"][-1]["latency"]["graph_laps_p50"]) + " | nodes walked |",
    ]
    lines.append("|---|" + "---|" * (len(saved["steps"][-1]["latency"]["graph_laps_p50"]) + 1))
    for r in saved["steps"]:
        laps = r["latency"]["graph_laps_p50"]
        lines.append(
            f"| {r['passages']:,} | "
            + " | ".join(f"{v:.1f}" for v in laps.values())
            + f" | {r['latency']['graph_nodes_p50']:.0f} |"
        )
    if "recall_check" in saved:
        lines += [
            "",
            "| check half | questions | hybrid own R@2 / R@5 | hybrid mixed | cost | graph own R@2 / R@5 "
            "| graph mixed | cost | p50 hybrid / graph (mixed) | other corpora in top 5, hybrid / graph |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name, row in saved["recall_check"].items():
            own = OWN_CHECK[name]
            cells = []
            for i, mode in enumerate(("hybrid", "graph")):
                mixed = (row[mode]["R@2"], row[mode]["R@5"])
                cost = " / ".join(f"{o - m:+.1f}" for o, m in zip(own[i], mixed, strict=True))
                cells += [f"{own[i][0]:.1f} / {own[i][1]:.1f}", f"{mixed[0]:.1f} / {mixed[1]:.1f}", cost]
            lines.append(
                f"| {name} | {row['questions']} | {' | '.join(cells)} "
                f"| {row['hybrid']['p50']:.0f} / {row['graph']['p50']:.0f} ms "
                + (
                    f"| {row['hybrid']['foreign_top5']:.1f}% / {row['graph']['foreign_top5']:.1f}% |"
                    if "foreign_top5" in row["hybrid"]
                    else "| - |"
                )
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--store", default=str(ROOT / ".rag-graphs" / "mixed.db"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sample", type=int, default=50, help="latency questions per dataset")
    parser.add_argument("--steps", type=int, nargs="+", default=STEPS, help="store sizes before 'all'")
    parser.add_argument("--fresh", action="store_true", help="drop the mixed collection first")
    parser.add_argument("--no-recall", action="store_true", help="skip the check-half recall")
    parser.add_argument("--score", nargs="+", default=None, help="score only these datasets (default: all)")
    parser.add_argument(
        "--clean-copy", action="store_true", help="also time search on a never-upserted copy of the store"
    )
    parser.add_argument("--limit", type=int, default=None, help="store at most N passages (a smoke test)")
    parser.add_argument("--questions", type=int, default=None, help="first N check questions per dataset")
    parser.add_argument("--plot-only", action="store_true")
    parser.add_argument(
        "--latency-only",
        action="store_true",
        help="re-time warm search on the store as it is (no build, no recall, nothing saved), e.g. on a "
        "quiet machine",
    )
    parser.add_argument(
        "--unprotected",
        action="store_true",
        help="with --latency-only: graph search without hybrid's protected top (keep_first=0, keep_in_top=0)",
    )
    parser.add_argument("--out", default=str(RESULTS / "mixed_store.json"))
    args = parser.parse_args()

    out_path = Path(args.out)
    saved = json.loads(out_path.read_text()) if out_path.exists() else {}
    if args.plot_only:
        plot(saved["steps"], RESULTS / "graph_growth.png")
        print(tables(saved))
        return

    from rag_graphs.config.graph_search import GraphSearchOptions
    from rag_graphs.entity_graph.build import build_graph
    from rag_graphs.entity_graph.entities import load_extractor
    from rag_graphs.entity_graph.rows import entity_collection
    from rag_graphs.eval.corpus import passage_documents
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.eval.halves import split
    from rag_graphs.store import load_embeddings, open_index

    keep = (0, 0) if args.unprotected else (1, 2)
    options = GraphSearchOptions(keep_first=keep[0], keep_in_top=keep[1])
    print(f"graph search options: {options}", flush=True)
    datasets = {name: load_dataset(EVAL / name) for name in DATASETS}
    order, alias, counts = mixed_passages(datasets, args.seed)
    order = order[: args.limit]
    print(f"passages: {json.dumps(counts)}", flush=True)
    sample_rng = random.Random(args.seed)
    sample = [
        e.question
        for d in datasets.values()
        for e in sample_rng.sample(d.examples, min(args.sample, len(d.examples)))
    ]
    warmup = [
        "Who directed the film that won the award?",
        "Where was the author born?",
        "What river flows there?",
    ]

    embeddings = load_embeddings("embedded")
    extractor = load_extractor("spacy", n_process=1)
    embeddings.embed_documents(["warm up"])  # model loads are not part of any timing
    extractor(["Warm up in Paris with Marie Curie."])
    index = open_index(args.store, COLLECTION, embeddings)
    if args.latency_only:
        before = load_average()
        timed = latency(index, sample, options, warmup)
        print(json.dumps({"passages": index.count(), "load": [before, load_average()], **timed}, indent=1))
        return
    if args.fresh and index.stored.exists():
        for coll in (COLLECTION, entity_collection(COLLECTION)):
            index.derived(coll).drop()
        saved = {}
        index = open_index(args.store, COLLECTION, embeddings)
    rows = [r for r in saved.get("steps", [])]
    cumulative = rows[-1]["cumulative"] if rows else {"embed": 0.0, "insert": 0.0, "build": 0.0}
    targets = [s for s in args.steps if s < len(order)] + [len(order)]
    for target in targets:
        have = index.count() if index.stored.exists() else 0
        if have >= target:
            print(f"{target}: stored already ({have}), step kept from {out_path.name}", flush=True)
            continue
        if have != (rows[-1]["passages"] if rows else 0):
            raise SystemExit(f"store holds {have} passages, not a measured step: re-run with --fresh")
        new = [d for name, p in order[have:target] for d in passage_documents(p, datasets[name])]
        step = {"passages": target, "added": len(new), "load_start": load_average()}
        start = time.perf_counter()
        vectors = []
        for i in range(0, len(new), BATCH):
            vectors += embeddings.embed_documents([d.page_content for d in new[i : i + BATCH]])
        step["embed"] = time.perf_counter() - start
        start = time.perf_counter()
        index.add(new, vectors=vectors)
        index.flush()
        step["insert"] = time.perf_counter() - start
        print(
            f"{target}: embedded {len(new)} in {step['embed']:.0f}s, inserted in {step['insert']:.0f}s",
            flush=True,
        )
        report = build_graph(index, extractor, titles=True, progress=False)
        step["build"] = report.seconds
        step["build_parts"] = {
            "extract": report.extract_seconds,
            "entity_rows": report.entity_seconds,
            "chunk_writes": report.write_seconds,
            "repair_and_flush": report.seconds
            - report.extract_seconds
            - report.entity_seconds
            - report.write_seconds,
        }
        step["annotated"], step["entities_added"] = report.annotated, report.entities_added
        print(f"{target}: {report.summary()}", flush=True)
        for key in cumulative:
            cumulative[key] += step[key]
        step["cumulative"] = dict(cumulative)
        step["build_over_embed"] = cumulative["build"] / cumulative["embed"]
        step["entities"] = index.derived(entity_collection(COLLECTION)).count()
        step["latency"] = latency(index, sample, options, warmup)
        step["questions"] = len(sample)
        step["load_end"] = load_average()
        rows.append(step)
        brief = {
            m: {k: round(v) for k, v in step["latency"][m].items()} for m in ("dense", "hybrid", "graph")
        }
        print(
            f"{target}: build/embed {step['build_over_embed']:.2f}x; latency {json.dumps(brief)}", flush=True
        )
        print(f"{target}: graph laps p50 {json.dumps(step['latency']['graph_laps_p50'])}", flush=True)
        saved.update(steps=rows, counts=counts, options=dataclasses.asdict(options), seed=args.seed)
        out_path.write_text(json.dumps(saved, indent=2))

    if not args.no_recall:
        recall_rows = saved.get("recall_check", {})
        for name, dataset in datasets.items():
            if args.score and name not in args.score:
                continue
            examples = split(dataset.examples, "check")[: args.questions]
            own = {alias[p["id"]] for p in dataset.passages()}
            scores = score(index, examples, alias, options, own)
            recall_rows[name] = {
                "questions": len(examples),
                **{m: {k: v for k, v in s.items() if k != "per_question"} for m, s in scores.items()},
                "gold_aliased": sum(g in alias and alias[g] != g for e in examples for g in e.supporting_ids),
            }
            print(f"{name} check ({len(examples)}): {json.dumps(recall_rows[name])}", flush=True)
            per_question = ROOT / "bench_runs" / f"mixed_store_{name}_check.json"
            per_question.parent.mkdir(exist_ok=True)
            per_question.write_text(json.dumps({m: s["per_question"] for m, s in scores.items()}))
        saved["recall_check"] = recall_rows
    if args.clean_copy:
        saved["clean_copy"] = clean_copy_latency(index, sample, warmup)
    saved["machine"] = {
        "nproc": os.cpu_count(),
        "uname": subprocess.run(["uname", "-srm"], capture_output=True, text=True).stdout.strip(),
        "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_end": load_average(),
    }
    out_path.write_text(json.dumps(saved, indent=2))
    plot(rows, RESULTS / "graph_growth.png")
    print(tables(saved))


if __name__ == "__main__":
    main()
