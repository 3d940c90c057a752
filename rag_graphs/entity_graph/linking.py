"""Graph search's first stage: link the question to the entity graph (its seeds).

Two ways, both against the entity collection (``rag_graphs.entity_graph.build``):

* **mentions**: the question extractor's mentions (spaCy NER by default),
  matched by key, else (a mention no key matches) to the nearest entity
  names by embedding, above a cosine threshold (``GraphSearchOptions.link_threshold``);
* **name n-grams**: the question's name-like word n-grams looked up as keys
  (finds the title-cased film and book names NER misses); the longest found
  ones are kept.

Key look-ups are by primary key (~1 ms); a match by embedding is a vector
search over every entity (~30 ms on 64,000 entities in Milvus Lite, 145-485 ms
on 124,537; in process over the state's name vectors, ``name_search``, where
graph search has them), so it runs only for mentions no key matched. (Linking
the whole question by meaning as well, ``query_link_k``, changed nothing on
2Wiki's tune half and left the product: BENCHMARKS.md, round 3.)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from rag_graphs.entity_graph.entities import Extractor, SpacyExtractor, normalize
from rag_graphs.entity_graph.name_search import NameVectors
from rag_graphs.entity_graph.rows import CHUNKS_FIELD, COUNT_FIELD, NAME_FIELD, GraphRows, entity_table
from rag_graphs.store.fields import _DENSE_SEARCH, DENSE_FIELD, PRIMARY_FIELD
from rag_graphs.store.index import ChunkIndex
from rag_graphs.store.keywords import STOP_WORDS
from rag_graphs.store.reads import embed_queries

ENTITY_FIELDS = [NAME_FIELD, CHUNKS_FIELD, COUNT_FIELD]

LINK_K = 3
"""Nearest entity names a mention no key matches may link to (each above the threshold): a
mention is one entity, and its spelling variants are the few nearest names."""
MAX_NGRAM = 8
"""Longest question n-gram (in words) looked up as an entity key: long enough for film and book
titles ("Reaching For The Sun"), short enough that a question costs a few hundred key look-ups."""

QUESTION_WORDS = frozenset({"what", "which", "who", "whom", "whose", "when", "where", "why", "how"})
"""Words that open a span of the question's own asking ("what year", "how many"), not a name."""

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


def ngram_keys(text: str, max_words: int = MAX_NGRAM) -> dict[str, tuple[int, int]]:
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


def mention_span(mention: str) -> str:
    """The part of an extractor's mention that names something: "" for a span of the question's
    own words (a question word, then no capitalised word or number: spaCy's DATE "what year",
    "which century"; "Who Framed Roger Rabbit" is kept), trailing function words cut ("October
    1995 to" -> "October 1995").

    Why: such spans match no entity key, so each paid a nearest-name search, and linked noise
    ("what year" -> "14 may 2001" at 0.750; BENCHMARKS.md, "Graph search latency, round 6")."""
    words = list(_WORD.finditer(mention))
    if not words:
        return ""
    if words[0].group(0).casefold() in QUESTION_WORDS and not any(
        _capitalised(w.group(0)) for w in words[1:]
    ):
        return ""
    end = len(words)
    while end and words[end - 1].group(0).casefold() in STOP_WORDS:
        end -= 1
    return mention[: words[end - 1].end()] if end else ""


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
    index: ChunkIndex,
    vectors: list[list[float]],
    limits: list[int],
    threshold: float,
    names: NameVectors | None = None,
    rows: GraphRows | None = None,
) -> dict[str, dict]:
    """Entity key -> row (name, chunks, n) plus ``similarity``: the best cosine over the
    vectors, each taking its ``limits[i]`` nearest names at or above ``threshold``. ``names``
    (with ``rows``, the same state's reads): searched in process, exactly; else in Milvus."""
    found: dict[str, dict] = {}
    if not vectors or max(limits, default=0) <= 0:
        return found
    hits: list[tuple[str, float, dict]] = []  # (key, similarity, row) of every vector's nearest
    if names is not None and rows is not None:
        nearest = names.nearest(vectors, limits, threshold)
        stored = rows.entities([key for each in nearest for key, _ in each], ENTITY_FIELDS)
        for each in nearest:
            for key, similarity in each:
                row = stored.get(key)
                if row is not None:
                    hits.append((key, similarity, {f: v for f, v in row.items() if f != PRIMARY_FIELD}))
    else:
        results = entity_table(index).search(
            vectors, field=DENSE_FIELD, params=_DENSE_SEARCH, limit=max(limits), fields=ENTITY_FIELDS
        )
        for each, limit in zip(results, limits, strict=True):
            for hit in list(each)[:limit]:
                hits.append((hit.get(PRIMARY_FIELD) or hit.get("id"), float(hit["distance"]), hit["entity"]))
    for key, similarity, row in hits:
        if similarity >= threshold and similarity > found.get(key, {}).get("similarity", 0.0):
            found[key] = {**row, "similarity": similarity}
    return found


def named_seeds(
    index: ChunkIndex, query: str, mentions: list[str], rows: GraphRows | None = None
) -> tuple[dict[str, dict], list[str]]:
    """Entities the question names by key: its mentions' keys and its longest name-like
    n-grams (``similarity`` 1.0); and the mentions no key matched (to match by meaning).
    ``rows``: the search's reads (``rows.graph_rows``); None reads the store."""
    keys = [normalize(m) for m in mentions]
    spans = ngram_keys(query)
    stored = (rows if rows is not None else GraphRows(index)).entities([*keys, *spans], ENTITY_FIELDS)
    named = [k for k in keys if k in stored]
    named += longest_matches(spans, {k for k in spans if k in stored})
    seeds = {key: {**stored[key], "similarity": 1.0} for key in named}
    return seeds, [m for m, key in zip(mentions, keys, strict=True) if key not in stored]


@dataclass(frozen=True)
class LinkedQuestion:
    """The question linked to the graph: its seeds, entity key -> entity row (name, chunks, n)
    plus ``similarity`` (1.0 by key, the cosine by meaning), best first; and the mentions its
    extractor found (for a trace)."""

    seeds: dict[str, dict]
    mentions: list[str]


def link_question(
    index: ChunkIndex,
    query: str,
    *,
    threshold: float,
    limit: int,
    lap: Callable[[str], None] = lambda name: None,
    rows: GraphRows | None = None,
    names: NameVectors | None = None,
) -> LinkedQuestion:
    """The question's seeds: the entities it names by key (mentions and name n-grams), then the
    nearest names of the mentions no key matched (``threshold``), best match first, at most
    ``limit``. ``lap`` is told ``"mentions"`` once the extractor and key look-ups are done;
    ``rows``: the search's key reads (``rows.graph_rows``), None reads the store; ``names``: the
    same state's name vectors (``name_search``), None searches the nearest names in Milvus."""
    extractor = question_extractor()
    spans = (mention_span(m) for m in (extractor([query])[0] if extractor else []))
    mentions = [m for m in spans if normalize(m)]
    matched, unmatched = named_seeds(index, query, mentions, rows)
    vectors = embed_queries(index.embeddings, unmatched) if unmatched else []
    lap("mentions")
    nearest = nearest_entities(index, vectors, [LINK_K] * len(unmatched), threshold, names, rows)
    for key, row in nearest.items():
        matched.setdefault(key, row)
    seeds = dict(sorted(matched.items(), key=lambda kv: -kv[1]["similarity"])[:limit])
    return LinkedQuestion(seeds, mentions)
