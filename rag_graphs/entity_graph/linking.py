"""A question's entities: the seeds of graph search (``rag_graphs.entity_graph.ppr``).

Three ways, all against the entity collection (``rag_graphs.entity_graph.build``):

* **mentions**: the question extractor's mentions (spaCy NER by default),
  matched by key, else (a mention no key matches) to the nearest entity
  names by embedding, above a cosine threshold;
* **name n-grams**: the question's name-like word n-grams looked up as keys
  (finds the title-cased film and book names NER misses); the longest found
  ones are kept;
* **the whole question** (optional): its nearest entity names by embedding.

Key look-ups are by primary key (~1 ms); a match by embedding is a vector
search over every entity (~30 ms on 64,000 entities here), so it runs only
for mentions no key matched.

Also the first dense/hybrid hits, searched with the question vector already
computed for linking (one embedding per question, the search overlapping the
entity look-ups).
"""

from __future__ import annotations

import re
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache

from langchain_core.documents import Document

from rag_graphs.entity_graph.entities import Extractor, SpacyExtractor, normalize
from rag_graphs.entity_graph.rows import CHUNKS_FIELD, COUNT_FIELD, NAME_FIELD, entity_collection, entity_rows
from rag_graphs.store.fields import DENSE_FIELD, PRIMARY_FIELD, SearchMode
from rag_graphs.store.index import ChunkIndex
from rag_graphs.store.keywords import STOP_WORDS

_DENSE_SEARCH = {"metric_type": "COSINE", "params": {}}
ENTITY_FIELDS = [NAME_FIELD, CHUNKS_FIELD, COUNT_FIELD]
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="graph-search")

_WORD = re.compile(r"[\w][\w'’.\-]*")


@lru_cache(maxsize=1)
def question_extractor() -> Extractor | None:
    """spaCy NER for questions when installed (loaded once), else None (no mention step)."""
    try:
        return SpacyExtractor()
    except ImportError:
        return None


def _capitalised(word: str) -> bool:
    return word[:1].isupper() or word[:1].isdigit()


def ngram_keys(text: str, max_words: int = 8) -> dict[str, tuple[int, int]]:
    """Entity keys of the question's name-like word n-grams (up to ``max_words``) -> word span.

    Where the question capitalises names (a capitalised word after the first),
    an n-gram must start and end with a capitalised word or a number
    ("Reaching For The Sun", not "born" or "came out"); in an all-lower-case
    question, any n-gram of two or more words that are not all stop words.
    """
    matches = list(_WORD.finditer(text))
    words = [m.group(0) for m in matches]
    cased = any(_capitalised(w) for w in words[1:])
    out: dict[str, tuple[int, int]] = {}
    for i in range(len(words)):
        for j in range(i + 1, min(i + max_words, len(words)) + 1):
            if cased:
                if not (_capitalised(words[i]) and _capitalised(words[j - 1])) or (i == 0 and j == 1):
                    continue
            elif j - i < 2 or all(w.casefold() in STOP_WORDS for w in words[i:j]):
                continue
            key = normalize(text[matches[i].start() : matches[j - 1].end()])
            if key and key not in out:
                out[key] = (i, j)
    return out


def longest_matches(spans: dict[str, tuple[int, int]], found: set[str]) -> list[str]:
    """The found keys whose spans overlap no longer found span (longest first)."""
    chosen: list[str] = []
    taken: set[int] = set()
    for key in sorted(found, key=lambda k: (spans[k][0] - spans[k][1], spans[k][0])):
        words = set(range(*spans[key]))
        if not words & taken:
            chosen.append(key)
            taken |= words
    return chosen


def nearest_entities(
    index: ChunkIndex, vectors: list[list[float]], limits: list[int], threshold: float
) -> dict[str, dict]:
    """Entity key -> row (name, chunks, n) plus ``similarity``: the best cosine over the
    vectors, each taking its ``limits[i]`` nearest names at or above ``threshold``."""
    found: dict[str, dict] = {}
    if not vectors or max(limits, default=0) <= 0:
        return found
    results = index.client.search(
        entity_collection(index.collection),
        data=vectors,
        anns_field=DENSE_FIELD,
        search_params=_DENSE_SEARCH,
        limit=max(limits),
        output_fields=ENTITY_FIELDS,
    )
    for hits, limit in zip(results, limits, strict=True):
        for hit in list(hits)[:limit]:
            similarity = float(hit["distance"])
            key = hit.get(PRIMARY_FIELD) or hit.get("id")
            if similarity >= threshold and similarity > found.get(key, {}).get("similarity", 0.0):
                found[key] = {**hit["entity"], "similarity": similarity}
    return found


def named_seeds(
    index: ChunkIndex, query: str, mentions: list[str], *, max_ngram: int
) -> tuple[dict[str, dict], list[str]]:
    """Entities the question names by key: its mentions' keys and its longest name-like
    n-grams (``similarity`` 1.0); and the mentions no key matched (to match by meaning)."""
    keys = [normalize(m) for m in mentions]
    spans = ngram_keys(query, max_ngram) if max_ngram else {}
    stored = entity_rows(index, [*keys, *spans], ENTITY_FIELDS)
    named = [k for k in keys if k in stored]
    named += longest_matches(spans, {k for k in spans if k in stored})
    seeds = {key: {**stored[key], "similarity": 1.0} for key in named}
    return seeds, [m for m, key in zip(mentions, keys, strict=True) if key not in stored]


def search_with_vector(
    index: ChunkIndex, query: str, vector: list[float], *, k: int, mode: SearchMode, expr: str | None
) -> Future:
    """``ChunkIndex.search`` with the query vector already computed, run in a worker thread
    (so it overlaps the entity look-ups); the future gives ``[(Document, score)]``."""

    def run() -> list[tuple[Document, float]]:
        return index.search_many([query], k=k, mode=mode, expr=expr, vectors=[vector])[0]

    return _POOL.submit(run)


def first_searches(index: ChunkIndex, query: str, vector: list[float], *, k: int, expr: str | None) -> Future:
    """``ChunkIndex.search_legs`` in a worker thread: the dense ranking (it seeds the walk) and the
    hybrid ranking (graph search protects its top) from one dense and one BM25 search, where a
    dense and a hybrid search would run the dense one twice (Milvus Lite runs in this process,
    so the two searches never overlapped each other, only the entity look-ups)."""
    return _POOL.submit(index.search_legs, query, vector, k=k, expr=expr)
