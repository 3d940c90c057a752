"""Graph retrieval (entities in the store + Personalized PageRank) against dense and hybrid search.

For each dataset under ``../shared/eval`` (read in place, never copied): the corpus is
indexed once into a Milvus Lite store (``rag_graphs.eval.corpus.open_corpus``), copied
(stored vectors, no second embedding) into a graph collection per extractor variant, and
the graph is built there with ``rag_graphs.entity_graph.build.build_graph``. Then every dev question is
searched three ways (dense, hybrid, graph) and scored by supporting-passage recall
R@k = |gold ∩ top-k| / |gold| (gold = ``supporting_ids``), averaged over questions.

Also reported: graph build time beside the time to embed the same passages (measured in
the same run, so machine load mostly cancels), the number of entities, and search p50
with and without the graph.

Run:
    .venv/bin/python bench/graph_retrieval.py                      # the three corpora
    .venv/bin/python bench/graph_retrieval.py --datasets 2wikimultihopqa_hippocorpus --limit 50
    .venv/bin/python bench/graph_retrieval.py --set damping=0.5 --set title_weight=3   # options
    .venv/bin/python bench/graph_retrieval.py --split tune --set ...   # choose on the tune half,
    .venv/bin/python bench/graph_retrieval.py --split check            # report the check half too
    .venv/bin/python bench/graph_retrieval.py --bm25-all-words ...     # BM25 asked every word (A/B)

Graph search runs with ``GraphSearchOptions`` at their defaults (``RagContext().graph_search``,
what every method searches with); ``--set name=value`` changes one option (an option that is
not in ``GraphSearchOptions`` is refused).

``--split tune|check`` keeps one fixed half of the dev questions (``rag_graphs.eval.halves``:
the parity of sha1(question id)), applied before ``--limit``. Defaults are chosen on ``tune``
only (issue 28's protocol); the table then counts, per question, where graph search beats or
loses to hybrid search at R@5 (and R@2).

The store is ``.rag-graphs/graph_bench.db`` (its own path: Milvus Lite allows one process
per path, and the evaluator's ``eval.db`` may be in use). ``--rebuild`` drops the graph
collections and builds them again (to re-time the build).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval"
DATASETS = ["2wikimultihopqa_hippocorpus", "musique", "hotpotqa"]
PUBLISHED = {  # HippoRAG paper, Table 2: passage R@5
    "BM25": {"musique": 41.2, "2wikimultihopqa_hippocorpus": 61.9, "hotpotqa": 72.2},
    "ColBERTv2": {"musique": 49.2, "2wikimultihopqa_hippocorpus": 68.2, "hotpotqa": 79.3},
    "HippoRAG (ColBERTv2)": {"musique": 51.9, "2wikimultihopqa_hippocorpus": 89.1, "hotpotqa": 77.7},
}
VARIANTS = {
    # name: (extractor options, titles)
    "ner+title": ({}, True),
    "ner": ({}, False),
    "ner+nouns+title": ({"noun_chunks": True}, True),
}


def recall(ranked: list[str], gold: tuple[str, ...], k: int) -> float:
    return len(set(ranked[:k]) & set(gold)) / len(gold) if gold else 0.0


def parse_knobs(pairs: list[str]) -> dict:
    knobs = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        try:
            knobs[key] = json.loads(value)
        except ValueError:
            knobs[key] = value
    return knobs


def graph_index(base, variant: str, *, rebuild: bool, n_process: int, timings: dict):
    """The graph collection of ``variant``: a copy of ``base`` (its vectors), graph built."""
    from rag_graphs.entity_graph.build import build_graph
    from rag_graphs.entity_graph.entities import load_extractor
    from rag_graphs.entity_graph.rows import entity_collection
    from rag_graphs.store import open_index

    name = f"{base.collection}_{variant.replace('+', '_')}"
    if rebuild:
        for coll in (name, entity_collection(name)):
            base.derived(coll).drop()
    index = open_index(base.uri, name, base.embeddings)
    if index.count() < base.count():
        rows = base.iter_chunks()
        docs = []
        for doc, _ in rows:
            doc.metadata["chunk_id"] = doc.id
            docs.append(doc)
        index.add(docs, vectors=[v for _, v in rows])
        index.flush()
    options, titles = VARIANTS[variant]
    extractor = load_extractor("spacy", n_process=n_process, **options)
    report = build_graph(index, extractor, titles=titles, progress=True)
    if report.annotated:
        timings["build"] = report.__dict__
    return index


def embed_seconds(dataset, embeddings) -> float:
    from rag_graphs.eval.corpus import corpus_documents

    texts = [d.page_content for d in corpus_documents(dataset)]
    start = time.perf_counter()
    embeddings.embed_documents(texts)
    return time.perf_counter() - start


def evaluate(index, graph, examples, options, k_max: int = 5, modes=("dense", "hybrid", "graph")):
    from rag_graphs.entity_graph.graph_search import graph_search

    out = {}
    runs = {
        "dense": lambda q: [d.id for d, _ in index.search(q, k=k_max, mode="dense")],
        "hybrid": lambda q: [d.id for d, _ in index.search(q, k=k_max, mode="hybrid")],
        "graph": lambda q: [d.id for d, _ in graph_search(graph, q, k=k_max, options=options).hits],
    }
    runs = {name: run for name, run in runs.items() if name in modes}
    for name, run in runs.items():
        run(examples[0].question)  # warm up (model loads)
        r2, r5, ms = [], [], []
        for example in examples:
            start = time.perf_counter()
            ranked = run(example.question)
            ms.append((time.perf_counter() - start) * 1000)
            r2.append(recall(ranked, example.supporting_ids, 2))
            r5.append(recall(ranked, example.supporting_ids, 5))
        out[name] = {
            "R@2": 100 * statistics.mean(r2),
            "R@5": 100 * statistics.mean(r5),
            "ms": statistics.mean(ms),
            "p50": statistics.median(ms),
            "per_question": {e.id: [a, b] for e, a, b in zip(examples, r2, r5, strict=True)},
        }
    return out


def wins_losses(scores: dict, against: str = "hybrid", mode: str = "graph", at: int = 1) -> tuple[int, int]:
    """Questions where ``mode`` has higher / lower recall than ``against`` (``at`` 0: R@2, 1: R@5)."""
    if mode not in scores or against not in scores:
        return 0, 0
    ours, theirs = scores[mode]["per_question"], scores[against]["per_question"]
    better = sum(ours[q][at] > theirs[q][at] for q in ours)
    worse = sum(ours[q][at] < theirs[q][at] for q in ours)
    return better, worse


def ppr_speed(graph, examples, options, n: int = 50) -> dict[str, float]:
    """Median ms of one PPR walk on the questions' neighbourhoods: scipy sparse power
    iteration (what graph search uses) against networkx's pagerank on the same graph."""
    import networkx as nx

    import rag_graphs.entity_graph.walk as walk
    from rag_graphs.entity_graph.graph_search import graph_search

    captured = []
    original = walk.pagerank

    def capture(adjacency, reset, **kwargs):
        captured.append((adjacency, reset, kwargs))
        return original(adjacency, reset, **kwargs)

    walk.pagerank = capture
    try:
        for example in examples[:n]:
            graph_search(graph, example.question, k=5, options=options)
    finally:
        walk.pagerank = original
    scipy_ms, nx_ms = [], []
    for adjacency, reset, kwargs in captured:
        start = time.perf_counter()
        original(adjacency, reset, **kwargs)
        scipy_ms.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        g = nx.from_scipy_sparse_array(adjacency)
        personal = {i: float(w) for i, w in enumerate(reset) if w > 0}
        nx.pagerank(g, alpha=kwargs["damping"], personalization=personal, tol=1e-8)
        nx_ms.append((time.perf_counter() - start) * 1000)
    sizes = [int(a.shape[0]) for a, _, _ in captured]
    return {
        "walks": len(captured),
        "nodes p50": statistics.median(sizes) if sizes else 0,
        "scipy ms p50": statistics.median(scipy_ms) if scipy_ms else 0,
        "networkx ms p50": statistics.median(nx_ms) if nx_ms else 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument("--limit", type=int, default=None, help="first N dev questions (default: all)")
    parser.add_argument(
        "--split", default="all", choices=["tune", "check", "all"], help="one fixed half of the dev set"
    )
    parser.add_argument("--modes", nargs="+", default=["dense", "hybrid", "graph"], help="retrievers run")
    parser.add_argument("--store", default=str(ROOT / ".rag-graphs" / "graph_bench.db"))
    parser.add_argument("--variant", default="ner+title", choices=sorted(VARIANTS))
    parser.add_argument(
        "--set", dest="knobs", action="append", default=[], help="one GraphSearchOptions option, name=value"
    )
    parser.add_argument("--rebuild", action="store_true", help="drop and rebuild the graph (re-time it)")
    parser.add_argument("--n-process", type=int, default=1, help="spaCy worker processes for the build")
    parser.add_argument("--ppr", action="store_true", help="also time scipy PPR against networkx")
    parser.add_argument("--no-embed-timing", action="store_true", help="skip timing the passage embedding")
    parser.add_argument(
        "--bm25-all-words",
        action="store_true",
        help="send BM25 the whole question (before: function words left out; the A/B of that change)",
    )
    args = parser.parse_args()

    from rag_graphs.config.graph_search import GraphSearchOptions
    from rag_graphs.entity_graph.rows import entity_collection
    from rag_graphs.eval.corpus import open_corpus
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.eval.halves import split
    from rag_graphs.store import load_embeddings

    knobs = parse_knobs(args.knobs)
    options = GraphSearchOptions(**knobs)  # the defaults (RagContext's), changed by --set
    embeddings = load_embeddings("embedded")
    results_path = ROOT / "bench_runs" / "graph_retrieval.json"
    results_path.parent.mkdir(exist_ok=True)
    saved = json.loads(results_path.read_text()) if results_path.exists() else {}
    rows = []
    for name in args.datasets:
        dataset = load_dataset(EVAL / name)
        examples = split(dataset.examples, args.split)[: args.limit]
        base = open_corpus(dataset, args.store, embeddings, "embedded")
        arm = "/bm25-all-words" if args.bm25_all_words else ""
        entry = saved.setdefault(f"{name}/{args.variant}/{args.split}{arm}", {})
        timings: dict = {}
        graph = graph_index(
            base, args.variant, rebuild=args.rebuild, n_process=args.n_process, timings=timings
        )
        if args.bm25_all_words:
            base.bm25_stop_words = graph.bm25_stop_words = frozenset()
        if "build" in timings:
            entry["build"] = timings["build"]
            if not args.no_embed_timing:
                entry["embed_seconds"] = embed_seconds(dataset, embeddings)
        entry["entities"] = graph.derived(entity_collection(graph.collection)).count()
        entry["passages"] = base.count()
        scores = evaluate(base, graph, examples, options, modes=args.modes)
        entry["scores"] = scores
        entry["knobs"] = knobs
        entry["questions"] = len(examples)
        if args.ppr:
            entry["ppr"] = ppr_speed(graph, examples, options)
            print(f"{name}: PPR {entry['ppr']}", flush=True)
        results_path.write_text(json.dumps(saved, indent=2))
        rows.append((name, entry))
        brief = {
            m: {key: round(v, 1) for key, v in s.items() if key != "per_question"} for m, s in scores.items()
        }
        print(f"{name} ({args.split}, {len(examples)} questions): {json.dumps(brief)}", flush=True)

    print(
        f"\n### Retrieval: R@2 / R@5 (%) and ms per question ({args.variant}, knobs {knobs or 'default'})\n"
    )
    print(
        f"| dataset | half | questions | {' | '.join(args.modes)} | graph vs hybrid R@5 better / worse "
        "| R@2 better / worse | published R@5 BM25 / ColBERTv2 / HippoRAG |"
    )
    print("|---|---|---|" + "---|" * len(args.modes) + "---|---|---|")
    for name, entry in rows:
        cells = [
            f"{s['R@2']:.1f} / {s['R@5']:.1f} / {s['ms']:.0f} ms"
            for s in (entry["scores"][m] for m in args.modes)
        ]
        published = " / ".join(
            f"{PUBLISHED[r][name]:.1f}" if name in PUBLISHED[r] else "-" for r in PUBLISHED
        )
        r5, r2 = wins_losses(entry["scores"], at=1), wins_losses(entry["scores"], at=0)
        print(
            f"| {name} | {args.split} | {entry['questions']} | {' | '.join(cells)} "
            f"| {r5[0]} / {r5[1]} | {r2[0]} / {r2[1]} | {published} |"
        )
    print("\n### Graph build and search\n")
    print(
        "| dataset | passages | entities | embed passages (s) | graph build (s) | build / embed "
        "| extract / entity rows / chunk writes (s) | p50 dense | p50 hybrid | p50 graph |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, entry in rows:
        build = entry.get("build") or {}
        embed = entry.get("embed_seconds")
        ratio = f"{build['seconds'] / embed:.2f}x" if build and embed else "-"
        parts = (
            f"{build['extract_seconds']:.0f} / {build['entity_seconds']:.0f} / {build['write_seconds']:.0f}"
            if build
            else "-"
        )
        p50 = {m: f"{s['p50']:.0f} ms" for m, s in entry["scores"].items()}
        print(
            f"| {name} | {entry['passages']} | {entry['entities']} | {embed or 0:.0f} "
            f"| {build.get('seconds', 0):.0f} | {ratio} | {parts} | {p50.get('dense', '-')} "
            f"| {p50.get('hybrid', '-')} | {p50.get('graph', '-')} |"
        )


if __name__ == "__main__":
    main()
