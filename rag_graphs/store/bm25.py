"""BM25 over an in-process copy of a chunk collection's texts (graph search's first BM25 search,
issue 47 round 5), scored as Milvus Lite's BM25 function scores, with statistics over the live rows.

Why: at 21k passages Milvus Lite's BM25 search took ~33 ms of a graph search (Python over every
posting of every query term, per segment), the largest lap left in the first searches once the
dense one ran in process (``store.mirror``). Here the BM25 weight of every (term, chunk) pair is
computed once per store state, with the copy, into a sparse term x chunk matrix
(``scipy.sparse.csr_matrix``): a query adds up a few of its rows (~1 ms).

How it matches the store (``milvus_lite`` 3.2, the collection made by ``store.index`` with
``BM25BuiltInFunction()`` and no analyzer parameters): the standard analyzer (``\\w+`` over the
text lowered by ``str.lower``, no stop words in the stored text), each token hashed to 32 bits by
FNV-1a (``milvus_lite.analyzer.hash``; two words of one hash are one term there, so here too), a
document's length its token count, the query's weights its own term counts, and

    score(d, q) = sum_t  q_t * IDF(t) * f(t,d) * (k1 + 1) / (f(t,d) + k1 * (1 - b + b * |d| / avgdl))
    IDF(t) = ln((N - df(t) + 0.5) / (df(t) + 0.5) + 1)

with Milvus Lite's defaults k1 = 1.5 and b = 0.75 (``index/sparse_factory.py``; the collection's
sparse index sets neither, ``store.fields._SPARSE_INDEX``; a Milvus server's default k1 is 1.2).
The difference from Milvus Lite is deliberate: it takes N, df and avgdl per segment over every row
stored in the segment (superseded versions and deleted rows included); here they are the live
rows' (the rows readers see), so a store ingested in steps ranks as one ingested at once. Ties: the
earlier stored row first. BENCHMARKS.md "Graph search in process, round 5" measures the recall.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix

K1 = 1.5
"""BM25's term-frequency saturation, as Milvus Lite's BM25 index defaults it (``bm25_k1``)."""
B = 0.75
"""BM25's length normalisation, as Milvus Lite's BM25 index defaults it (``bm25_b``)."""

_TOKEN = re.compile(r"\w+", re.UNICODE)
_FNV_OFFSET, _FNV_PRIME, _MASK32 = 0x811C9DC5, 0x01000193, 0xFFFFFFFF


def tokens(text: str) -> list[str]:
    """``text``'s tokens as the store's standard analyzer makes them: ``\\w+`` over ``text.lower()``.

    >>> tokens("Henry King's films, 1920-1930")
    ['henry', 'king', 's', 'films', '1920', '1930']
    """
    return _TOKEN.findall(text.lower())


def term_id(token: str) -> int:
    """The 32-bit FNV-1a hash of ``token``'s UTF-8 bytes: the term id Milvus Lite stores.

    >>> term_id("a")
    3826002220
    """
    h = _FNV_OFFSET
    for byte in token.encode("utf-8"):
        h = ((h ^ byte) * _FNV_PRIME) & _MASK32
    return h


@dataclass(frozen=True)
class Bm25Matrix:
    """Precomputed BM25 weights: ``weights[row of term, chunk]`` is that term's contribution to the
    chunk's score for a query holding it once; ``terms`` maps a term id to its row."""

    terms: dict[int, int]
    weights: csr_matrix
    chunks: int

    @classmethod
    def build(cls, texts: Sequence[str], *, k1: float = K1, b: float = B) -> Bm25Matrix:
        """The matrix over ``texts`` (one per chunk, in stored order; N, df and avgdl are theirs)."""
        counts = [Counter(tokens(text)) for text in texts]
        ids: dict[str, int] = {}
        terms: dict[int, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        tfs: list[float] = []
        lengths = np.zeros(len(texts), dtype=np.float64)
        for col, counted in enumerate(counts):
            by_term: Counter[int] = Counter()
            for token, tf in counted.items():
                tid = ids.get(token)
                if tid is None:
                    tid = ids[token] = term_id(token)
                by_term[tid] += tf  # two tokens of one hash are one term, as in the store
            lengths[col] = sum(counted.values())
            for tid, tf in by_term.items():
                rows.append(terms.setdefault(tid, len(terms)))
                cols.append(col)
                tfs.append(float(tf))
        n = len(texts)
        avgdl = float(lengths.sum()) / n if n else 0.0
        avgdl = avgdl if avgdl > 0 else 1.0
        row = np.asarray(rows, dtype=np.int64)
        freq = np.asarray(tfs, dtype=np.float64)
        df = np.bincount(row, minlength=len(terms))
        idf = np.asarray([math.log((n - d + 0.5) / (d + 0.5) + 1.0) for d in df.tolist()])
        dl = lengths[np.asarray(cols, dtype=np.int64)] if cols else np.zeros(0)
        weight = idf[row] * ((freq * (k1 + 1.0)) / (freq + k1 * (1.0 - b + b * dl / avgdl)))
        matrix = csr_matrix((weight, (row, np.asarray(cols, dtype=np.int64))), shape=(len(terms), n))
        return cls(terms, matrix, n)

    def scores(self, query: str) -> np.ndarray:
        """Every chunk's BM25 score for ``query`` (analysed as the stored texts; 0: no term shared)."""
        scores = np.zeros(self.chunks, dtype=np.float64)
        matrix = self.weights
        for tid, weight in Counter(term_id(t) for t in tokens(query)).items():
            row = self.terms.get(tid)
            if row is None:
                continue
            start, end = matrix.indptr[row], matrix.indptr[row + 1]
            scores[matrix.indices[start:end]] += matrix.data[start:end] * weight
        return scores

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best chunks (positions in stored order) with a positive score, best first, ties
        by position."""
        scores = self.scores(query)
        hit = np.flatnonzero(scores > 0)
        if k <= 0 or not len(hit):
            return []
        if k < len(hit):
            hit = hit[np.argpartition(-scores[hit], k - 1)[:k]]
        hit = hit[np.lexsort((hit, -scores[hit]))]
        return [(int(i), float(scores[i])) for i in hit]
