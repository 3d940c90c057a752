"""What BM25 is asked: a query's words without English function words.

Milvus Lite (3.x, pure Python) scores BM25 by walking each query term's posting
list. "the", "of", "in" and "was" are in nearly every chunk, so on the 21k-passage
mixed store they were ~60 of a sparse search's ~85 ms while adding next to nothing
to the ranking (their IDF is near zero). Only the query is filtered: stored text
and the collection's analyzer are unchanged (no re-ingest), and a Milvus server
sees the same query. BENCHMARKS.md "BM25 without function words" has the timing
and the recall on the tune / check halves.
"""

from __future__ import annotations

import re

STOP_WORDS = frozenset(
    "a an and are as at be by did do does for from had has have he her his how in is it its "
    "of on or she than that the their them they this to was were what when where which who "
    "whom whose why will with".split()
)
"""Articles, auxiliaries, pronouns, common prepositions and question words. Kept: negations
and every content word; also the n-gram filter of graph search's entity linking."""

_WORD = re.compile(r"\w+")


def keyword_query(text: str, stop_words: frozenset[str] = STOP_WORDS) -> str:
    """``text``'s words less ``stop_words`` (case-insensitive), space-joined; ``text`` itself
    when nothing else is left (a question of function words still searches)."""
    if not stop_words:
        return text
    kept = [w for w in _WORD.findall(text) if w.casefold() not in stop_words]
    return " ".join(kept) if kept else text
