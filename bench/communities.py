"""GraphRAG communities: what detecting them costs beside entity extraction and embedding, which
Leiden to use, and how many LLM calls their reports take per 1k passages.

Passages: the eval corpora under ``../shared/eval`` (read in place, never copied), hotpotqa, then
2wikimultihopqa_hippocorpus, then musique, in corpus order; sizes are prefixes (1k, 5k, 20k).

1. Entity extraction (spaCy, as ingest does it: ``annotate`` with titles) and embedding (the
   embedded MiniLM) run once over the largest size in batches; the time at each size is the time
   to reach it (both are per-passage work, linear in the passages).
2. Communities, one run per size: co-occurrence edges + hierarchical Leiden
   (``rag_graphs.entity_graph.communities.detect``, graspologic-native), beside leidenalg + igraph
   on the same edges (one level; its hierarchy would be more calls on top).
3. Reports with the embedded chat model (SmolLM2 via ``load_chat_model("embedded")``) on the
   first ``--llm-passages`` passages in a temporary Milvus Lite store: the community count is the
   call count (the grammar mode makes one call per report); the build is stopped after
   ``--llm-reports`` reports (it is resumable) to time a call without waiting for all of them.

Run:
    .venv/bin/python bench/communities.py                         # 1k, 5k, 20k + the LLM sample
    .venv/bin/python bench/communities.py --sizes 1000 --llm-passages 0
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval"
DATASETS = ["hotpotqa", "2wikimultihopqa_hippocorpus", "musique"]
BATCH = 500


def passages(limit: int) -> list:
    from rag_graphs.eval.corpus import corpus_documents
    from rag_graphs.eval.datasets import load_dataset

    docs: list = []
    for name in DATASETS:
        docs += corpus_documents(load_dataset(EVAL / name))
        if len(docs) >= limit:
            break
    return docs[:limit]


def per_passage_work(docs: list, sizes: list[int], embed_up_to: int) -> dict[int, dict[str, float]]:
    """Seconds to annotate and to embed the first ``size`` passages, for each size. Embedding stops
    after ``embed_up_to`` passages; a bigger size gets the rate so far times its passages
    (``embed_extrapolated``): it is the same work per passage, and slow on a shared CPU."""
    from rag_graphs.entity_graph.entities import annotate, load_extractor
    from rag_graphs.store import load_embeddings

    extractor, embeddings = load_extractor("spacy"), load_embeddings("embedded")
    annotate(docs[:8], extractor)  # load before timing
    embeddings.embed_documents([d.page_content for d in docs[:8]])
    spent = {"extract": 0.0, "embed": 0.0}
    embedded = 0
    out: dict[int, dict[str, float]] = {}
    for start in range(0, max(sizes), BATCH):
        batch = docs[start : start + BATCH]
        began = time.perf_counter()
        annotate(batch, extractor)
        spent["extract"] += time.perf_counter() - began
        done = start + len(batch)
        if done <= embed_up_to:
            began = time.perf_counter()
            embeddings.embed_documents([d.page_content for d in batch])
            spent["embed"] += time.perf_counter() - began
            embedded = done
        for size in sizes:
            if done == size:
                out[size] = dict(spent)
                if embedded and size > embedded:
                    out[size]["embed"] = spent["embed"] / embedded * size
                    out[size]["embed_extrapolated"] = 1
        print(f"  {done} passages: extract {spent['extract']:.0f}s, embed {spent['embed']:.0f}s", flush=True)
    return out


def detection(docs: list, seed: int = 0) -> dict[str, float | int]:
    """One community detection over ``docs``' entities, timed by stage, and leidenalg beside it."""
    import igraph
    import leidenalg

    from rag_graphs.entity_graph.communities import ChunkEntities, cooccurrence_edges, detect

    chunks = [ChunkEntities(str(d.metadata["chunk_id"]), tuple(d.metadata["entities"])) for d in docs]
    began = time.perf_counter()
    edges = cooccurrence_edges(chunks)
    edge_seconds = time.perf_counter() - began
    began = time.perf_counter()
    partition = detect(chunks, seed=seed)
    detect_seconds = time.perf_counter() - began
    began = time.perf_counter()
    graph = igraph.Graph.TupleList([(a, b) for a, b, _ in edges], directed=False)
    graph.es["weight"] = [w for _, _, w in edges]
    found = leidenalg.find_partition(graph, leidenalg.ModularityVertexPartition, weights="weight", seed=seed)
    leidenalg_seconds = time.perf_counter() - began
    return {
        "entities": len({e for c in chunks for e in c.entities}),
        "edges": len(edges),
        "edges_s": edge_seconds,
        "communities_s": detect_seconds,
        "communities": len(partition.communities),
        "levels": partition.levels(),
        "uncovered": partition.uncovered,
        "one_chunk": sum(len(c.chunks) == 1 for c in partition.communities),
        "leidenalg_one_level_s": leidenalg_seconds,
        "leidenalg_communities": len(found),
    }


class Enough(Exception):
    """Stops a report build after the sampled calls (what it wrote stays: builds resume)."""


def report_sample(n_passages: int, n_reports: int) -> dict[str, float | int]:
    """Build reports over the first ``n_passages`` passages with the embedded chat model, stopped
    after ``n_reports`` calls; the community count is the full build's call count."""
    from rag_graphs.entity_graph.build import add_entities
    from rag_graphs.entity_graph.communities import communities
    from rag_graphs.entity_graph.entities import annotate, load_extractor
    from rag_graphs.ingestion.community_reports import build_reports
    from rag_graphs.llm.models import load_chat_model
    from rag_graphs.llm.structured import invoke_structured
    from rag_graphs.store import load_embeddings, open_index

    docs = passages(n_passages)
    names = annotate(docs, load_extractor("spacy"))
    with tempfile.TemporaryDirectory() as folder:
        index = open_index(str(Path(folder) / "bench.db"), "bench", load_embeddings("embedded"))
        add_entities(index, docs, names)
        index.add(docs)
        seconds: list[float] = []
        calls = {"n": 0, "methods": {}}

        def timed_ask(model, messages, schema, default):
            if calls["n"] >= n_reports:
                raise Enough
            began = time.perf_counter()
            result = invoke_structured(model, messages, schema, default)
            seconds.append(time.perf_counter() - began)
            calls["n"] += len(result.calls)
            calls["methods"][result.method] = calls["methods"].get(result.method, 0) + 1
            return result

        model = load_chat_model("embedded", max_tokens=400)
        try:
            build_reports(index, model, ask=timed_ask, progress=False)
        except Enough:
            pass
        partition = communities(index)  # what the whole build would write: one call each
    return {
        "passages": n_passages,
        "communities": len(partition.communities),
        "reports_sampled": len(seconds),
        "calls_sampled": calls["n"],
        "methods": calls["methods"],
        "seconds_per_call": sum(seconds) / max(1, len(seconds)),
        "calls_per_1k": 1000 * len(partition.communities) / n_passages,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000])
    parser.add_argument("--embed-up-to", type=int, default=5000, help="passages embedded at most")
    parser.add_argument("--llm-passages", type=int, default=200)
    parser.add_argument("--llm-reports", type=int, default=8)
    parser.add_argument("--out", type=Path, default=ROOT / "bench_runs" / "communities.json")
    args = parser.parse_args()
    results: dict = {"nproc": os.cpu_count()}
    if args.sizes:
        sizes = sorted(args.sizes)
        docs = passages(sizes[-1])
        sizes = [s for s in sizes if s <= len(docs)]
        work = per_passage_work(docs, sizes, args.embed_up_to)
        for size in sizes:
            found = detection(docs[:size])
            results[str(size)] = {**work[size], **found}
            print(size, json.dumps(results[str(size)]), flush=True)
    if args.llm_passages:
        results["reports"] = report_sample(args.llm_passages, args.llm_reports)
        print(json.dumps(results.get("reports")), flush=True)
    args.out.parent.mkdir(exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
