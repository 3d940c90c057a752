"""Foundation benchmarks on the embedded models: embedding throughput, ingest time,
search p50 (dense and hybrid), embedded LLM load time and tokens/s, naive RAG latency.

Run: ``make bench`` (or ``.venv/bin/python bench/foundation.py``). Prints a Markdown
table and writes ``bench_runs/foundation.json``. Timings vary with machine load; read
them as orders of magnitude and compare ratios measured in the same run.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import tempfile
import time
from importlib import resources
from pathlib import Path

from sections import replace_section


def _p50(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


RATIO_PASSAGES = 1024
FAN_OUTS = (2, 3, 4, 5)
"""Searches per fan-out with the defaults: step_back 2; decomposition 2-4 sub-questions;
multi_query and rag_fusion 3 queries + the question = 4. 5 is past every default."""
FAN_OUT_ROUNDS = 20


def _fan_out_ratio(ctx, queries: list[str]) -> dict[str, float]:
    """Wall time of N queries searched as one batch (``search_many``: one embedding call,
    one Milvus request) and one by one, over one query searched alone; medians of
    ``FAN_OUT_ROUNDS`` rounds, each round on new queries (target for the batch: <= 1.5)."""
    from rag_graphs.search.retrieval import search, search_many

    out = {}
    for n in FAN_OUTS:
        single, batched, sequential = [], [], []
        for i in range(FAN_OUT_ROUNDS):
            group = [queries[(i * n + j) % len(queries)] for j in range(n)]
            t = time.perf_counter()
            search(ctx, group[0])
            single.append(time.perf_counter() - t)
            t = time.perf_counter()
            search_many(ctx, group)
            batched.append(time.perf_counter() - t)
            t = time.perf_counter()
            for q in group:
                search(ctx, q)
            sequential.append(time.perf_counter() - t)
        one = statistics.median(single)
        out[f"fan-out: {n} queries batched / 1 query (wall-time ratio, hybrid)"] = (
            statistics.median(batched) / one
        )
        out[f"fan-out: {n} queries one by one / 1 query (wall-time ratio, hybrid)"] = (
            statistics.median(sequential) / one
        )
    return out


def _indexing_ratio(emb) -> dict[str, float]:
    """Passages/s through the whole indexing path vs the embedding model alone, same passages.

    The ratio is what the store and the pipeline cost on top of embedding
    (1.0 = free); one run, so machine noise mostly cancels.
    """
    from rag_graphs.eval.corpus import passage_documents
    from rag_graphs.eval.datasets import load_dataset

    dataset = load_dataset(Path(__file__).resolve().parent.parent.parent / "shared" / "eval" / "hotpotqa")
    passages = []
    for passage in dataset.passages():
        passages.append(passage_documents(passage, dataset)[0])  # each fits: one piece
        if len(passages) == RATIO_PASSAGES:
            break
    t = time.perf_counter()
    emb.embed_documents([d.page_content for d in passages])
    embed_rate = len(passages) / (time.perf_counter() - t)
    with tempfile.TemporaryDirectory() as tmp:
        from rag_graphs.store import ChunkIndex

        index = ChunkIndex(uri=str(Path(tmp) / "ratio.db"), collection="ratio", embeddings=emb)
        t = time.perf_counter()
        index.add(passages)
        index.flush()
        index_rate = len(passages) / (time.perf_counter() - t)
    return {
        "HotpotQA passages embedded alone (passages/s)": embed_rate,
        "HotpotQA passages indexed: embed + insert + BM25 + flush (passages/s)": index_rate,
        "indexing throughput / embedding throughput": index_rate / embed_rate,
    }


INGEST_FILES = 64
PASSAGES_PER_FILE = 16


def _ingest_ratio(emb, rounds: int = 3) -> dict[str, float]:
    """Chunks/s of ``ingest`` on real text files vs raw embedding of the same chunk texts.

    The files are Markdown, one HotpotQA passage per section, so conversion,
    chunking, embedding, insert and flush all run as they would for a user's
    folder. Ingest (into a fresh store) and raw embedding alternate for
    ``rounds`` rounds and each side takes its median: on a noisy 2-core machine
    one pair varies by +-5%. Target (issue 3): end to end >= 0.8 of raw embedding.
    """
    from rag_graphs.config.context import RagContext
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.ingestion import IngestOptions, ingest
    from rag_graphs.store import open_index

    dataset = load_dataset(Path(__file__).resolve().parent.parent.parent / "shared" / "eval" / "hotpotqa")
    passages = iter(dataset.passages())
    end_to_end, raw = [], []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "docs"
        folder.mkdir()
        for i in range(INGEST_FILES):
            sections = [next(passages) for _ in range(PASSAGES_PER_FILE)]
            text = "\n\n".join(f"## {p['title']}\n\n{p['text']}" for p in sections)
            (folder / f"doc{i:03d}.md").write_text(f"# Notes {i}\n\n{text}\n", encoding="utf-8")
        for round_ in range(rounds):
            uri = str(Path(tmp) / f"ingest{round_}.db")
            report = ingest(
                [folder],
                index=RagContext(store_uri=uri, collection="ingest"),
                options=IngestOptions(progress=False),
            )
            end_to_end.append(report.chunks / report.seconds)
            texts = [d.page_content for d, _ in open_index(uri, "ingest", emb).iter_chunks()]
            t = time.perf_counter()
            emb.embed_documents(texts)
            raw.append(len(texts) / (time.perf_counter() - t))
    ingest_rate, raw_rate = statistics.median(end_to_end), statistics.median(raw)
    return {
        f"file ingest, {INGEST_FILES} Markdown files, end to end (chunks/s, median of {rounds})": ingest_rate,
        f"raw embedding of the same chunk texts (chunks/s, median of {rounds})": raw_rate,
        "file ingest throughput / raw embedding throughput (target >= 0.8)": ingest_rate / raw_rate,
    }


def main() -> None:
    from rag_graphs.config.context import RagContext
    from rag_graphs.ingestion import IngestOptions, ingest
    from rag_graphs.llm.models import load_chat_model
    from rag_graphs.methods.naive import graph
    from rag_graphs.store import load_embeddings, open_index

    corpus = Path(str(resources.files("rag_graphs").joinpath("demo_corpus")))
    rows: dict[str, float | str] = {}

    t = time.perf_counter()
    emb = load_embeddings("embedded")
    emb.embed_query("warm up")
    rows["embeddings load (s)"] = time.perf_counter() - t
    sentences = [
        f"Sentence {i}: the town number {i} lies on the coast of province {i % 7}." for i in range(512)
    ]
    t = time.perf_counter()
    emb.embed_documents(sentences)
    rows["embedding throughput, all-MiniLM-L6-v2, 512 sentences (sentences/s)"] = len(sentences) / (
        time.perf_counter() - t
    )

    with tempfile.TemporaryDirectory() as tmp:
        uri = str(Path(tmp) / "bench.db")
        report = ingest(
            [corpus],
            index=RagContext(store_uri=uri, collection="bench"),
            options=IngestOptions(progress=False),
        )
        rows["demo ingest into a new store: convert + chunk + embed + insert + flush (s)"] = report.seconds
        rows["demo chunks"] = report.chunks
        again = ingest(
            [corpus],
            index=RagContext(store_uri=uri, collection="bench"),
            options=IngestOptions(progress=False),
        )
        rows["demo re-ingest, nothing new (s)"] = again.seconds

        index = open_index(uri, "bench", emb)
        queries = [f"Where was the founder of institute {i} born?" for i in range(100)]
        for mode in ("dense", "hybrid"):
            samples = []
            for q in queries:
                t = time.perf_counter()
                index.search(q, k=4, mode=mode)
                samples.append(time.perf_counter() - t)
            rows[f"search p50, {mode}, k=4, after flush (ms)"] = _p50(samples)
        rows |= _fan_out_ratio(RagContext(store_uri=uri, collection="bench"), queries)

        t = time.perf_counter()
        model = load_chat_model("embedded")
        rows["SmolLM2 llama.cpp load (s)"] = time.perf_counter() - t
        ctx = RagContext(store_uri=uri, collection="bench")
        questions = [
            "Where was Ilsa Brandt born?",
            "Who founded the Velmora Institute?",
            "What is the capital of Asterra?",
        ]
        latencies, completion, gen_seconds = [], 0, 0.0
        for q in questions:
            t = time.perf_counter()
            out = graph.invoke({"question": q}, context=ctx)
            latencies.append(time.perf_counter() - t)
            completion += out["usage"]["completion_tokens"]
        t = time.perf_counter()
        reply = model.invoke("Write three sentences about lighthouses.")
        gen_seconds = time.perf_counter() - t
        rows["SmolLM2 tokens/s, free generation"] = reply.usage_metadata["output_tokens"] / gen_seconds
        rows["naive RAG p50 latency per question, k=4 (s)"] = statistics.median(latencies)
        rows["naive RAG completion tokens / question"] = completion / len(questions)

    rows |= _indexing_ratio(emb)
    rows |= _ingest_ratio(emb)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    table = "\n".join(
        ["| measure | value |", "|---|---|"]
        + [f"| {k} | {v:.3g} |" if isinstance(v, float) else f"| {k} | {v} |" for k, v in rows.items()]
    )
    print(f"machine: {machine}\n\n{table}")
    replace_section(
        "foundation",
        f"`make bench` (`bench/foundation.py`), {time.strftime('%Y-%m-%d')}, {machine}. Demo corpus: "
        "5 files (Markdown, HTML, text, CSV); embedded models, Milvus Lite, hybrid collection. "
        f"Indexing ratio: the first {RATIO_PASSAGES} passages of HotpotQA's corpus.\n\n{table}",
        heading="Foundation numbers on the demo corpus",
    )
    out_dir = Path("bench_runs")
    out_dir.mkdir(exist_ok=True)
    (out_dir / "foundation.json").write_text(json.dumps({"machine": machine, **rows}, indent=2))


if __name__ == "__main__":
    main()
