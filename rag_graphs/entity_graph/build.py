"""The chunk-entity graph, kept in the store (HippoRAG-style retrieval; search in
``rag_graphs.entity_graph.graph_search``).

Two things hold the graph, both in Milvus beside the chunks:

* every chunk row carries ``entities``, the keys of the entities it mentions
  (a dynamic field). These are the graph's edges and their source of truth:
  deleting or replacing a chunk removes its edges with it.
* the entity collection ``<collection>_entities`` holds one row per distinct
  entity key: ``pk`` (the key), ``name`` (a surface form), ``dense`` (the name
  embedded with the chunk collection's model, so a question's mentions match
  entities by meaning, not only by key), ``chunks`` (the ids of chunks that
  mention it, at most ``MAX_POSTINGS``) and ``n`` (how many were added).

Why the entity rows list their chunks: Milvus Lite evaluates a filter on a
dynamic field by parsing every row's JSON (``json_contains_any(entities, …)``
costs ~350 ms on 6,000 chunks here, and grows with the store) and cannot add a
typed field or a JSON index to an existing collection, while lookups by
primary key take a few ms. So the walk goes entity -> chunks through the
entity rows (by key) and chunk -> entities through the chunk rows (by id).

The entity -> chunks lists are an index, not the truth: a deleted chunk stays
listed until ``prune_entities`` runs, but search reads every chunk it walks
from the chunk collection (by id, with the caller's filter), so a deleted or
hidden chunk is never walked, ranked or shown; an entity whose chunks are all
gone seeds nothing. ``prune_entities`` rewrites the lists from the chunk rows
and removes orphan entities (to reclaim space and keep specificity exact).
Two processes appending to the same entity row at once (possible on a Milvus
server) can lose one list entry; ``prune_entities`` restores it.

Ingest keeps the graph current by annotating chunks and calling
``add_entities`` before the chunks are added (``rag_graphs.entity_graph.entities.annotate``),
so a chunk that carries ``entities`` is always recorded, even after a kill; a
collection ingested without entities gets them from ``build_graph``
(resumable: chunks that already carry ``entities`` are skipped; chunks that
carry them but are in no entity row, left by older versions, are re-recorded).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext, suppress
from dataclasses import dataclass
from functools import partial

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from rag_graphs.entity_graph.entities import Extractor, extract, title_mentions
from rag_graphs.entity_graph.rows import (
    CHUNKS_FIELD,
    COUNT_FIELD,
    MAX_POSTINGS,
    NAME_FIELD,
    ensure_entity_collection,
    entity_rows,
    entity_table,
    has_graph,
)
from rag_graphs.store.collection import LOOKUP_BATCH
from rag_graphs.store.fields import DENSE_FIELD, ENTITIES_FIELD, PRIMARY_FIELD, TEXT_FIELD
from rag_graphs.store.index import ChunkIndex
from rag_graphs.store.torch_threads import one_thread
from rag_graphs.support.progress import progress_bar


def add_entities(
    index: ChunkIndex,
    chunks: list[Document],
    names: dict[str, str] | None = None,
    *,
    batch: int = 1024,
    embed: Callable[[list[str]], list[list[float]]] | None = None,
) -> int:
    """Record the annotated ``chunks`` in the entity collection; return how many entities were new.

    Chunks carry ``metadata["entities"]`` (``rag_graphs.entity_graph.entities.annotate``,
    whose return value is ``names``: a surface form per key; the key itself is
    the name otherwise). New entities are embedded with the collection's model
    and inserted (by ``embed`` when given, else ``embed_on_one_thread``); known ones get the
    chunks appended to their list.
    """
    ensure_entity_collection(index)
    table = entity_table(index)
    postings: dict[str, list[str]] = {}
    for chunk in chunks:
        cid = str(chunk.metadata.get("chunk_id") or chunk.id)
        for key in chunk.metadata.get(ENTITIES_FIELD) or []:
            postings.setdefault(key, []).append(cid)
    if not postings:
        return 0
    names = names or {}
    known = entity_rows(index, list(postings), [CHUNKS_FIELD, COUNT_FIELD])
    updates = []
    for key, row in known.items():
        listed = list(row.get(CHUNKS_FIELD) or [])
        present = set(listed)
        added = [c for c in dict.fromkeys(postings[key]) if c not in present]
        if not added:
            continue
        full = len(listed) >= MAX_POSTINGS
        listed = (listed + added)[:MAX_POSTINGS]
        count = int(row.get(COUNT_FIELD) or 0) + len(added) if full else len(listed)
        updates.append({PRIMARY_FIELD: key, CHUNKS_FIELD: listed, COUNT_FIELD: count})
    for i in range(0, len(updates), batch):
        table.upsert_fields(updates[i : i + batch])
    missing = [k for k in postings if k not in known]
    for i in range(0, len(missing), batch):
        part = missing[i : i + batch]
        labels = [names.get(k, k) for k in part]
        vectors = (embed or partial(embed_on_one_thread, index.embeddings))(labels)
        rows = []
        for key, label, vector in zip(part, labels, vectors, strict=True):
            ids = list(dict.fromkeys(postings[key]))
            rows.append(
                {
                    PRIMARY_FIELD: key,
                    NAME_FIELD: label,
                    DENSE_FIELD: [float(x) for x in vector],
                    CHUNKS_FIELD: ids[:MAX_POSTINGS],
                    COUNT_FIELD: len(ids),
                }
            )
        table.insert(rows)
    index.mark_changed()  # cached graph rankings (any process) are stale now
    return len(missing)


def embed_on_one_thread(embeddings: Embeddings, texts: list[str]) -> list[list[float]]:
    """``embeddings.embed_documents(texts)`` on one torch thread in the calling thread
    (``store.torch_threads.one_thread``: that thread's count only, and its own back after).

    Entity names are a few tokens each, so embedding them is hundreds of tiny forward passes, and
    torch's two threads wait on each other at every one of them whenever anything else runs on
    the machine: 871 names took 10-15 s on two threads and 4-5 s on one (2.2 s of CPU against
    10-14) with the 2 cores shared (BENCHMARKS.md, "Ingest throughput (issue 47)"). Ingest embeds
    a group's chunks this way too, in a thread of their own while spaCy finds their entities, so
    the two use one core each. Names embed to the same vectors on any machine within ~3e-7 (one
    thread rounds differently from two on inputs this short; chunks' vectors came out bit for bit
    the same). A model that is not torch's runs as it is (the count is set, never used).
    """
    with one_thread():
        return embeddings.embed_documents(texts)


@dataclass
class GraphBuildReport:
    """What one ``build_graph`` run did, and where its time went."""

    chunks: int = 0  # chunks in the collection
    annotated: int = 0  # chunks given entities by this run
    repaired: int = 0  # chunks whose entities were missing from the entity collection
    skipped: int = 0  # chunks that carried entities already (an earlier run)
    entities_added: int = 0
    extract_seconds: float = 0.0  # in the extraction thread, beside the other two
    entity_seconds: float = 0.0  # embedding, inserting and updating entity rows
    write_seconds: float = 0.0  # writing ``entities`` onto chunk rows
    seconds: float = 0.0

    def summary(self) -> str:
        return (
            f"graph: {self.annotated} chunks annotated ({self.skipped} done before, "
            f"{self.repaired} re-recorded), "
            f"{self.entities_added} new entities in {self.seconds:.1f}s "
            f"(extract {self.extract_seconds:.1f}s, entities {self.entity_seconds:.1f}s, "
            f"write {self.write_seconds:.1f}s)"
        )


def build_graph(
    index: ChunkIndex,
    extractor: Extractor,
    *,
    titles: bool = True,
    batch: int = 512,
    progress: bool = True,
    repair: bool = False,
) -> GraphBuildReport:
    """Give every chunk without ``entities`` its entities, and record them in the entity collection.

    Resumable: chunks that carry ``entities`` (even an empty list) are skipped,
    so an interrupted build continues where it stopped; entity rows are
    written before the chunk rows, so a chunk marked done is always indexed.
    Chunks are read in batches of ``batch`` (never the whole collection at once).
    Each batch's entities are extracted in a thread of their own while this thread embeds and
    writes the batch before, so spaCy and the names' embedding each keep a core busy (2,000
    HotpotQA passages: 56 s -> 40-44 s; BENCHMARKS.md, "Round 7"); every store call stays here,
    and a batch's entity rows are written before the next batch's are looked up.
    ``repair`` also runs ``repair_entities``, for a store an older version damaged: it reads
    every annotated chunk and its entity rows (94 s at 21k passages), so a build that adds a
    few chunks to a big store, or finds nothing to do, does not pay it unasked.

    Raises:
        ValueError: the collection is empty or missing.
    """
    start = time.perf_counter()
    report = GraphBuildReport(chunks=index.count())
    if not report.chunks:
        raise ValueError(f"collection {index.collection!r} at {index.uri} is empty: ingest documents first")
    ensure_entity_collection(index)
    report.skipped = index.stored.count(f"exists {ENTITIES_FIELD}")
    bar = progress_bar(
        total=report.chunks, initial=report.skipped, desc="entities", unit="chunk", disable=not progress
    )
    stopped = True  # until the last batch is written: then a failing mark is the build's error

    def record(docs: list[Document], names: dict[str, str]) -> None:
        """A batch's entity rows, then its chunks' ``entities`` (this thread: every store call)."""
        t = time.perf_counter()
        report.entities_added += add_entities(index, docs, names)
        report.entity_seconds += time.perf_counter() - t
        t = time.perf_counter()
        index.stored.upsert_fields(
            [{PRIMARY_FIELD: str(d.id), ENTITIES_FIELD: d.metadata[ENTITIES_FIELD]} for d in docs]
        )
        report.write_seconds += time.perf_counter() - t
        report.annotated += len(docs)
        bar.update(len(docs))

    try:
        # the next batch's entities are extracted in a thread of their own while this one embeds
        # and writes the batch before (each on one core: spaCy, then the names on one torch thread)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="graph-extract") as extracting:
            ahead: Future[tuple[list[Document], dict[str, str], float]] | None = None
            for rows in index.stored.iterate(
                [PRIMARY_FIELD, TEXT_FIELD, "title", "headings"],
                where=f"not exists {ENTITIES_FIELD}",
                batch_size=batch,
            ):
                following = extracting.submit(_annotated, rows, extractor, titles)
                if ahead is not None:
                    record(*_extracted(ahead, report))
                ahead = following
            if ahead is not None:
                record(*_extracted(ahead, report))
        stopped = False
    finally:
        bar.close()
        # the chunks' entities were written after add_entities marked the store: what a graph
        # search read between the two is stale now, also when the build stopped on an error
        # (whose error a failing mark must not hide)
        if report.annotated:
            with suppress(Exception) if stopped else nullcontext():
                index.mark_changed()
    if repair:
        report.repaired = repair_entities(index, batch=batch)
    index.flush()
    entity_table(index).flush()
    report.seconds = time.perf_counter() - start
    return report


def _annotated(
    rows: list[dict], extractor: Extractor, titles: bool
) -> tuple[list[Document], dict[str, str], float]:
    """A batch's chunks carrying their ``entities`` (and ``chunk_id``), the names of the keys, and
    the seconds it took: ``build_graph``'s extraction thread (no store call)."""
    t = time.perf_counter()
    docs = [ChunkIndex._to_document(r) for r in rows]
    mentions = [title_mentions(d) for d in docs] if titles else None
    keys, names = extract([d.page_content for d in docs], extractor, titles=mentions)
    for doc, chunk_keys in zip(docs, keys, strict=True):
        doc.metadata[ENTITIES_FIELD] = chunk_keys
        doc.metadata["chunk_id"] = doc.id
    return docs, names, time.perf_counter() - t


def _extracted(
    done: Future[tuple[list[Document], dict[str, str], float]], report: GraphBuildReport
) -> tuple[list[Document], dict[str, str]]:
    """An extraction's batch and names (its error raised here), its seconds added to the report."""
    docs, names, seconds = done.result()
    report.extract_seconds += seconds
    return docs, names


def repair_entities(index: ChunkIndex, *, batch: int = 1000) -> int:
    """Record in the entity collection every chunk whose ``entities`` it lacks; return how many.

    Before ingest wrote entity rows ahead of the chunks, a ``kill -9`` between the two left
    chunks that carry ``entities`` (so ``build_graph`` skips them) but are in no entity row:
    their graph edges were missing for good. A chunk missing from a full list
    (``MAX_POSTINGS``) is not missing. A re-created entity is named by its key.
    """
    repaired = 0
    for rows in index.stored.iterate(
        [PRIMARY_FIELD, ENTITIES_FIELD], where=f"exists {ENTITIES_FIELD}", batch_size=batch
    ):
        keys = [k for r in rows for k in r.get(ENTITIES_FIELD) or []]
        listed = {
            key: set(row.get(CHUNKS_FIELD) or [])
            for key, row in entity_rows(index, keys, [CHUNKS_FIELD]).items()
        }
        lacking = []
        for row in rows:
            cid = row[PRIMARY_FIELD]
            missing = [
                k
                for k in row.get(ENTITIES_FIELD) or []
                if k not in listed or (cid not in listed[k] and len(listed[k]) < MAX_POSTINGS)
            ]
            if missing:
                lacking.append(Document(page_content="", id=cid, metadata={ENTITIES_FIELD: missing}))
        if lacking:
            add_entities(index, lacking)
            repaired += len(lacking)
    index.mark_changed()  # cached graph rankings (any process) are stale now
    return repaired


def prune_entities(index: ChunkIndex, *, batch: int = 1000) -> int:
    """Rewrite every entity's chunk list from the chunk rows; delete entities no chunk mentions.

    Returns how many entity rows were deleted. Reads the ``entities`` of every
    chunk once (ids and keys only; the inverted lists are held in memory).
    """
    if not has_graph(index):
        return 0
    table = entity_table(index)
    postings: dict[str, list[str]] = {}
    for rows in index.stored.iterate(
        [PRIMARY_FIELD, ENTITIES_FIELD], where=f"exists {ENTITIES_FIELD}", batch_size=batch
    ):
        for row in rows:
            for key in row.get(ENTITIES_FIELD) or []:
                postings.setdefault(key, []).append(row[PRIMARY_FIELD])
    orphans, updates = [], []
    for rows in table.iterate([PRIMARY_FIELD, CHUNKS_FIELD, COUNT_FIELD], batch_size=batch):
        for row in rows:
            ids = postings.get(row[PRIMARY_FIELD])
            if not ids:
                orphans.append(row[PRIMARY_FIELD])
            elif row.get(CHUNKS_FIELD) != ids[:MAX_POSTINGS] or row.get(COUNT_FIELD) != len(ids):
                updates.append(
                    {
                        PRIMARY_FIELD: row[PRIMARY_FIELD],
                        CHUNKS_FIELD: ids[:MAX_POSTINGS],
                        COUNT_FIELD: len(ids),
                    }
                )
    for i in range(0, len(updates), LOOKUP_BATCH):
        table.upsert_fields(updates[i : i + LOOKUP_BATCH])
    table.delete(orphans)
    index.mark_changed()  # cached graph rankings (any process) are stale now
    return len(orphans)
