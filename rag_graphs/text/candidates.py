"""Answer candidates of passages: their sentences, and the spans in them that could be an answer.

The extractive reader picks its answer among these spans, so they bound what it can
say: spaCy's named entities (with their labels: PERSON, GPE, DATE, CARDINAL...), places in
a row ("Midland, Michigan") and the passage's title (label ``TITLE``: HotpotQA and 2Wiki
answers are often the title of the passage the chain ends in). Every span is a verbatim
slice of its sentence, and every sentence a verbatim slice of the passage, so a quote can
always be found again.

spaCy is the NER-only pipeline ``entity_graph.entities.load_spacy()`` already loads for graph
search's question linking (one copy per process, no parser): the parser would double the
reader's cost (the budget is 50 ms a question) for noun chunks, which were the only right
candidate of 13% of HotpotQA questions and 2-3% of 2Wiki and MuSiQue ones (``bench/reader_fit.py``,
BENCHMARKS.md). Sentences are split by rule (``sentence_bounds``), and every line is at least
one (an ingested chunk leads with its headings, one a line). A Markdown table (ingest writes every
table as one) is read row by row: each row is a sentence, each cell a span labelled by its
column's header ("Capital" -> GPE, ``answer_types.column_label``), spaCy's labels being noise on
cells torn from their sentences. NER runs sentence by sentence, and only on the sentences
the caller selects (the reader's ``focus``: where an answer can be, issue 51's cost), the others
keeping their words and no span; each read sentence's entities are kept in an LRU cache keyed by
its text, so a sentence read again (a loop's next step, or the next question that retrieves it)
costs a look-up.
"""

from __future__ import annotations

import bisect
import itertools
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

from rag_graphs.entity_graph.entities import load_spacy
from rag_graphs.entity_graph.entities import normalize as _normalize
from rag_graphs.text.answer_types import column_label

CACHE_SIZE = 65536
"""Sentences whose entities are kept (a few hundred bytes each)."""
MAX_CHARS = 20_000
"""Characters of one passage read at most (spaCy's cost grows with length; the answer of a
retrieved chunk is in its first pages)."""
_WORD = re.compile(r"\w+")
normalize = lru_cache(maxsize=65536)(_normalize)
"""The entity key of a span (``entity_graph.entities.normalize``), memoised: a read keys the
same spans and titles many times over."""
_BREAK = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9\"'(\[])")
_TABLE = re.compile(r"^\|.*\n\|(?:[ \t]*:?-+:?[ \t]*\|)+[ \t]*(?:\n\|.*)*", re.MULTILINE)
"""A whole Markdown table: its header line, the rule, its rows."""
_LINE = re.compile(r"\S(?:[^\n]*\S)?")
"""A line's text without its leading and trailing blanks."""
_NUMBER = re.compile(r"[-+]?[$€£]?\d[\d,.\s]*%?")
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr st jr sr co inc ltd vs no mt gen col lt sgt prof rev u.s u.k fr ft sen rep gov "
    "capt maj jan feb mar apr aug sep sept oct nov dec".split()
)


def stem(word: str) -> str:
    """A crude stem, enough to match "directed" with "director" and "films" with "film": the
    first five letters, lower case, of the word without a plural "s"."""
    word = word.lower()
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word[:5]


def stems(text: str) -> frozenset[str]:
    """The stems of ``text``'s words."""
    return frozenset(stem(w) for w in _WORD.findall(text))


@dataclass(frozen=True)
class Span:
    """One candidate: its text, spaCy label, and character offsets inside its sentence."""

    text: str
    label: str
    start: int
    end: int
    token_start: int
    token_end: int
    column: str = ""
    """A table cell's column header ("Capital"), "" for a span of prose."""


@dataclass(frozen=True)
class ParsedSentence:
    """A sentence (verbatim), its lower-cased tokens and their stems, and the candidate spans in it."""

    text: str
    tokens: tuple[str, ...]
    spans: tuple[Span, ...]
    stems: tuple[str, ...]
    """Each token's stem, in order (a stem's position is its token's)."""
    header: tuple[str, ...] = ()
    """A table row's column headers (its cells' ``column``); () for a sentence of prose."""

    @cached_property
    def words(self) -> frozenset[str]:
        """The stems the sentence says: its tokens', and a table row's headers' (a row says
        "Capital: Lunmar" though only "Lunmar" is written in it)."""
        return frozenset(self.stems) | frozenset(stem(w) for h in self.header for w in _WORD.findall(h))


@dataclass(frozen=True)
class ParsedPassage:
    """A passage's title (may be empty), its body's sentences, and its entity keys."""

    title: str
    sentences: tuple[ParsedSentence, ...]
    keys: frozenset[str]

    @property
    def title_stems(self) -> frozenset[str]:
        """The stems of the title's words (a passage's sentences say "he" for its title)."""
        return stems(self.title)


_CACHE: OrderedDict[str, tuple[tuple[int, int, str], ...]] = OrderedDict()
"""Each NER-read sentence's entities, by its text."""
_LOCK = threading.Lock()


def split_title(text: str, title: str) -> str:
    """The passage body: ``text`` without a first line that is its ``title`` (stored chunks lead
    with it, ``eval.corpus``), so the title is not read as part of the first sentence."""
    if title and text.startswith(title):
        rest = text[len(title) :]
        if rest[:1] == "\n":
            return rest[1:]
    return text


def sentence_bounds(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of ``text``: a split after ``.``, ``!`` or ``?`` and space
    before a capital, a digit or a quote, except after an initial ("C. S. Lewis") or a common
    abbreviation ("St.", "U.S.")."""
    bounds, start = [], 0
    for match in _BREAK.finditer(text):
        before = (
            text[start : match.start()].rsplit(None, 1)[-1] if text[start : match.start()].strip() else ""
        )
        word = before.rstrip(".!?\"')]").lower()
        if len(word) <= 1 or word in _ABBREVIATIONS:
            continue
        bounds.append((start, match.start()))
        start = match.end()
    bounds.append((start, len(text)))
    return [
        (a, b) for a, b in ((a, len(text[:b].rstrip()) if b else b) for a, b in bounds) if text[a:b].strip()
    ]


def _place_chains(ents: list[tuple[int, int, str]], text: str) -> list[tuple[int, int, str]]:
    """ "Midland, Michigan" and "Brooklyn, New York": places in a row joined by commas, as one
    more span (answers name a place with its state or country as often as alone)."""
    chains = []
    i = 0
    while i < len(ents):
        j = i
        while (
            j + 1 < len(ents)
            and ents[j][2] == "GPE"
            and ents[j + 1][2] == "GPE"
            and text[ents[j][1] : ents[j + 1][0]] == ", "
        ):
            j += 1
        if j > i:
            chains.append((ents[i][0], ents[j][1], "GPE"))
        i = j + 1
    return chains


_NICKNAMED = re.compile(
    r"\b(?:[A-Z][\w.'-]*[ \t]+){1,3}[\"“][A-Z][\w.'-]*[\"”][ \t]+"
    r"[A-Z][\w'-]+(?:[ \t]+(?:[A-Z][\w'-]+|Jr\.|Sr\.))?"
)
"""A full name with a quoted nickname: 'Deborah "Deb" Lacusta', 'Henry Albert "Hank" Azaria'."""


def _nicknames(
    ents: list[tuple[int, int, str]], text: str, start: int, end: int
) -> list[tuple[int, int, str]]:
    """'Deborah "Deb" Lacusta' as one PERSON span where spaCy's entities cut it at the quotes
    ("Deborah" a person, 'Deb" Lacusta (' a work of art; a person among the pieces): the name as a
    biography's first sentence writes it, and as answers give it. It takes the pieces' place."""
    found = []
    for match in _NICKNAMED.finditer(text, start, end):
        a, b = match.span()
        if (a, b, "PERSON") not in ents and any(x < b and a < y and kind == "PERSON" for x, y, kind in ents):
            found.append((a, b, "PERSON"))
    return found


def _sentence(text: str, start: int, end: int, ents: list[tuple[int, int, str]]) -> ParsedSentence:
    """One sentence as tuples: its regex word tokens and the entities inside it."""
    sentence = text[start:end]
    words = [(m.start() + start, m.end() + start, m.group(0).lower()) for m in _WORD.finditer(sentence)]
    spans = []
    starts, ends = [w[0] for w in words], [w[1] for w in words]
    inside = [e for e in ents if start <= e[0] and e[1] <= end]
    named = _nicknames(inside, text, start, end)
    inside = sorted([e for e in inside if not any(x < e[1] and e[0] < y for x, y, _ in named)] + named)
    for a, b, label in inside + _place_chains(inside, text):
        a, b = a + len(text[a:b]) - len(text[a:b].lstrip()), a + len(text[a:b].rstrip())
        first = bisect.bisect_right(ends, a)  # the first word ending after a
        last = bisect.bisect_left(starts, b)  # the first word starting at or after b
        spans.append(Span(text[a:b], label, a - start, b - start, first, max(last, first + 1)))
    tokens = tuple(w[2] for w in words)
    return ParsedSentence(sentence, tokens, tuple(spans), tuple(stem(t) for t in tokens))


def _cells(line: str) -> list[tuple[int, int]]:
    """(start, end) of each cell of a Markdown table row, stripped, inside ``line``."""
    bars = [i for i, c in enumerate(line) if c == "|" and (i == 0 or line[i - 1] != "\\")]
    cells = []
    for a, b in itertools.pairwise(bars):
        inner = line[a + 1 : b]
        lead = len(inner) - len(inner.lstrip())
        cells.append((a + 1 + lead, a + 1 + len(inner.rstrip())))
    return cells


def tables(text: str) -> list[tuple[int, int]]:
    """(start, end) of each Markdown table in ``text`` (ingest writes every table as one): a
    ``|`` line, a rule line (``|---|---|``), then its rows, the ``|`` lines that follow."""
    return [m.span() for m in _TABLE.finditer(text)]


def table_rows(text: str, start: int, end: int) -> list[tuple[int, int, tuple[str, ...]]]:
    """The data rows of the table at ``text[start:end]``: (start, end) of each row's line and the
    table's column headers."""
    lines, at = [], start
    for line in text[start:end].split("\n"):
        lines.append((at, at + len(line.rstrip())))
        at += len(line) + 1
    head = text[lines[0][0] : lines[0][1]]
    header = tuple(head[a:b] for a, b in _cells(head))
    return [(a, b, header) for a, b in lines[2:] if text[a:b].startswith("|")]


def _cell_label(cell: str, column: str) -> str:
    """A cell's label: its column's (``column_label``), a number's, else ``CELL``."""
    label = column_label(column)
    if _NUMBER.fullmatch(cell):
        return "DATE" if label == "DATE" else "CARDINAL"
    return label or "CELL"


def _row(text: str, start: int, end: int, header: tuple[str, ...]) -> ParsedSentence:
    """One table row as a sentence: its line verbatim, each non-empty cell a span labelled by its
    column (``Span.column``), the row's headers kept beside it (``ParsedSentence.header``)."""
    line = text[start:end]
    words = list(_WORD.finditer(line))
    spans = []
    for column, (a, b) in zip(header, _cells(line), strict=False):
        cell = line[a:b]
        if not _WORD.search(cell):
            continue
        first = next((i for i, w in enumerate(words) if w.end() > a), len(words))
        last = next((i for i, w in enumerate(words) if w.start() >= b), len(words))
        spans.append(Span(cell, _cell_label(cell, column), a, b, first, max(last, first + 1), column))
    tokens = tuple(w.group(0).lower() for w in words)
    return ParsedSentence(line, tokens, tuple(spans), tuple(stem(t) for t in tokens), header)


def _bounds(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int, tuple[str, ...] | None]]:
    """Sentences and table rows of ``text`` in order: (start, end, the row's headers or None);
    ``spans`` are its tables (``tables``)."""
    found: list[tuple[int, int, tuple[str, ...] | None]] = []
    prose_at = 0
    for a, b in [*spans, (len(text), len(text))]:
        for line in _LINE.finditer(text, prose_at, a):  # a chunk's headings are lines of their own
            at, prose = line.start(), line.group(0)
            found += [(at + x, at + y, None) for x, y in sentence_bounds(prose)]
        found += table_rows(text, a, b) if b > a else []
        prose_at = b
    return found


def _lines_of(ents: list[tuple[int, int, str]], text: str) -> list[tuple[int, int, str]]:
    """Entities cut at line breaks: spaCy runs a heading into the next line ("Oda Penn\nEarly")."""
    out = []
    for a, b, label in ents:
        for piece in _LINE.finditer(text, a, b):
            out.append((piece.start(), piece.end(), label))
    return out


def entity_offsets(doc) -> list[tuple[int, int, str]]:
    """(start, end, label) of each of ``doc``'s entities, as ``doc.ents`` gives them, read from
    its token arrays: ``doc.ents`` builds a Python object per token of the passage, which cost as
    much as a fifth of the reader's time (issue 51's profile); this walks the same IOB tags
    (``Doc.ents``'s own rule: B opens, I continues, O, a missing tag or a B without a type closes)."""
    from spacy.attrs import ENT_IOB, ENT_TYPE, IDX, LENGTH  # spaCy is loaded by then

    if not len(doc):
        return []
    iob, kind, idx, length = doc.to_array([ENT_IOB, ENT_TYPE, IDX, LENGTH]).T.tolist()
    strings = doc.vocab.strings
    found, start = [], -1
    for i, tag in enumerate([*iob, 2]):  # a closing O after the last token
        if tag == 1 and start != -1:
            continue
        if start != -1:
            found.append((idx[start], idx[i - 1] + length[i - 1], strings[kind[start]]))
            start = -1
        if tag == 3 and kind[i]:
            start = i
    return found


Selector = Callable[[list[tuple[int, int, str]]], set[tuple[int, int]]]
"""Given every prose sentence as (passage, sentence, its text), the (passage, sentence) pairs
spaCy's NER is to read (``parse_passages``)."""


def _entities(texts: list[str]) -> list[tuple[tuple[int, int, str], ...]]:
    """Each sentence's entities, (start, end, label) inside it: cached by text (``_CACHE``), the
    rest through one ``nlp.pipe``."""
    with _LOCK:
        found = {t: _CACHE[t] for t in texts if t in _CACHE}
        for t in found:
            _CACHE.move_to_end(t)
    missing = [t for t in dict.fromkeys(texts) if t not in found]
    if missing:
        fresh = {
            t: tuple(e for e in entity_offsets(doc) if t[e[0] : e[1]].strip())
            for t, doc in zip(missing, load_spacy().pipe(missing), strict=True)
        }
        found.update(fresh)
        with _LOCK:
            _CACHE.update(fresh)
            while len(_CACHE) > CACHE_SIZE:
                _CACHE.popitem(last=False)
    return [found[t] for t in texts]


def parse_passages(
    passages: Sequence[tuple[str, str]], select: Selector | None = None
) -> list[ParsedPassage]:
    """Each ``(title, body)`` parsed. spaCy's NER runs sentence by sentence, on the sentences
    ``select`` keeps (every one without it): the others keep their words but offer no span. NER is
    nearly all of the reader's cost, and a sentence's entities are nearly those of its passage's
    parse (the small model looks a few words either side)."""
    texts = [body[:MAX_CHARS] for _, body in passages]
    layouts = [(spans := tables(text), _bounds(text, spans)) for text in texts]
    prose = [
        (d, i, texts[d][a:b])
        for d, (_, bounds) in enumerate(layouts)
        for i, (a, b, header) in enumerate(bounds)
        if header is None
    ]
    chosen = {(d, i) for d, i, _ in prose} if select is None else select(prose)
    read = [(d, i, sentence) for d, i, sentence in prose if (d, i) in chosen]
    ents: list[list[tuple[int, int, str]]] = [[] for _ in texts]
    for (d, i, _), found in zip(read, _entities([r[2] for r in read]), strict=True):
        at = layouts[d][1][i][0]
        ents[d] += [(at + a, at + b, label) for a, b, label in found]
    return [
        _parse(ents[d], spans, bounds, title, text)
        for d, ((title, _), text, (spans, bounds)) in enumerate(zip(passages, texts, layouts, strict=True))
    ]


def _parse(ents, spans, bounds, title: str, text: str) -> ParsedPassage:
    """A passage as plain tuples: its sentences and table rows, their spans, its entity keys."""
    ents = _lines_of(ents, text)
    sentences = tuple(
        _sentence(text, a, b, ents) if header is None else _row(text, a, b, header) for a, b, header in bounds
    )
    # a table's keys are its cells: spaCy's entities in a table are cut at random
    keys = {normalize(text[a:b]) for a, b, _ in ents if not any(x <= a < y for x, y in spans)}
    keys |= {normalize(span.text) for sentence in sentences if sentence.header for span in sentence.spans}
    if title:
        keys.add(normalize(title))
    keys.discard("")
    return ParsedPassage(title, sentences, frozenset(keys))
