"""Dense and hybrid search through the search caches: one ranking per query, the misses
searched as one batch, each hit this caller's own copy, scored (``cached_search``); a
collection dropped since ``begin`` checked it named in a ``SetupError``
(``missing_collection_named``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from rag_graphs.config.errors import SetupError
from rag_graphs.search.cache import SEARCHES, Ranking, normalise
from rag_graphs.search.disk_cache import disk_cache, disk_key
from rag_graphs.store import ChunkIndex
from rag_graphs.store.checks import check_collection_exists
from rag_graphs.store.generations import generation
from rag_graphs.store.sentences import (
    children_of,
    has_sentences,
    search_parents,
    sentence_collection,
)


@contextmanager
def missing_collection_named(index: ChunkIndex) -> Iterator[None]:
    """Searches run without asking the store first whether the collection exists (``begin``
    checked it once per run); a collection dropped since then fails the search, and this turns
    that failure into the ``SetupError`` naming the collection (any other error passes as is)."""
    try:
        yield
    except SetupError:
        raise
    except Exception:
        check_collection_exists(index)
        raise


def cached_search(
    index: ChunkIndex,
    queries: list[str],
    *,
    k: int,
    mode: Literal["dense", "hybrid"],
    expr: str | None,
    rrf_k: int,
    size: int,
    path: str | None = None,
    unit: Literal["chunk", "sentence"] = "chunk",
) -> list[list[Document]]:
    """One ranking per query, the misses searched as one batch; hits served by the process's
    search cache (``rag_graphs.search.cache``) or the persistent one at ``path``
    (``rag_graphs.search.disk_cache``, consulted on the process cache's misses) carry
    ``metadata["cached"] = True``. ``size`` 0 and no ``path``: no cache.

    With a ``path`` both caches key on the collection's ``fingerprint`` (read once per call),
    so a change another process made is seen by this one too.

    ``unit="sentence"`` searches the collection's sentence rows and returns their parent chunks
    (``rag_graphs.store.sentences``, small-to-big); the caches then key on the sentence
    collection too."""
    if size != SEARCHES.size:
        SEARCHES.resize(size)
    searcher = partial(index.search_many, missing_ok=False) if unit == "chunk" else _sentence_searcher(index)
    state = index.fingerprint() if path else generation(index.uri, index.collection)
    if unit == "sentence":
        children = children_of(index)
        state = f"{state}|{children.fingerprint() if path else generation(index.uri, children.collection)}"
    # what BM25 is asked (``keywords``) decides a hybrid ranking too: one cached before a change
    # to the words it leaves out is not served
    bm25 = " ".join(sorted(index.bm25_stop_words)) if mode == "hybrid" else ""
    keys: list[Hashable] = [
        (
            index.uri,
            index.collection,
            id(index.embeddings),
            state,
            unit,
            mode,
            bm25,
            expr,
            k,
            rrf_k,
            normalise(q),
        )
        for q in queries
    ]
    served: set[int] = set()

    def run(positions: list[int]) -> list[Ranking]:
        if not path:
            return searcher([queries[i] for i in positions], k=k, mode=mode, expr=expr, rrf_k=rrf_k)
        disk = disk_cache(path)
        model = embeddings_name(index.embeddings)
        where = index.uri if "://" in index.uri else str(Path(index.uri).expanduser().resolve())
        dkeys = {
            i: disk_key(
                where, index.collection, model, state, unit, mode, bm25, expr, k, rrf_k, normalise(queries[i])
            )
            for i in positions
        }
        stored = disk.get_many(list(dkeys.values()))
        served.update(i for i in positions if dkeys[i] in stored)
        todo = [i for i in positions if i not in served]
        start = time.perf_counter()
        fresh = searcher([queries[i] for i in todo], k=k, mode=mode, expr=expr, rrf_k=rrf_k)
        if todo:
            cost = (time.perf_counter() - start) / len(todo)
            disk.put_many({dkeys[i]: r for i, r in zip(todo, fresh, strict=True)}, cost)
        by_position = dict(zip(todo, fresh, strict=True))
        return [stored[dkeys[i]][0] if i in served else by_position[i] for i in positions]

    with missing_collection_named(index):
        rankings, cached = SEARCHES.many(keys, run)  # each hit a fresh copy, this call's own
    return [
        [_stamped(doc, score, **({"cached": True} if hit or i in served else {})) for doc, score in ranking]
        for i, (ranking, hit) in enumerate(zip(rankings, cached, strict=True))
    ]


def _sentence_searcher(index: ChunkIndex) -> Callable[..., list[Ranking]]:
    """Small-to-big search over ``index``'s sentence rows, or ValueError naming the setting when
    the collection has none (searching nothing would look like a corpus with no answer)."""
    if not has_sentences(index):
        raise ValueError(
            f"RagContext.search_unit='sentence': collection {index.collection!r} has no sentence rows "
            f"(no collection {sentence_collection(index.collection)!r}); build them with "
            f"`rag-graphs sentences build --collection {index.collection}` or ingest with "
            "`rag-graphs ingest --children`, or set search_unit=chunk (RAG_GRAPHS_SEARCH_UNIT)"
        )
    return partial(search_parents, index)


def embeddings_name(embeddings: Embeddings) -> str:
    """The embedding model as every process names it (class and model name), for persistent keys."""
    kind = type(embeddings)
    name = next(
        (
            str(getattr(embeddings, a))
            for a in ("model_name", "model", "size")
            if getattr(embeddings, a, None)
        ),
        "",
    )
    return f"{kind.__module__}.{kind.__qualname__}:{name}"


def _stamped(doc: Document, score: float, **extra: Any) -> Document:
    """``doc`` (a copy the search cache made for this caller) with its score, in place."""
    doc.metadata.update(score=score, **extra)
    return doc
