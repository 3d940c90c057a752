"""Answer candidates of passages: their sentences, and the spans in them that could be an answer.

The extractive reader picks its answer among these spans, so they bound what it can
say: spaCy's named entities (with their labels: PERSON, GPE, DATE, CARDINAL...), its
noun chunks (label ``CHUNK``: "an American rock band", "pharming") and the passage's
title (label ``TITLE``: HotpotQA and 2Wiki answers are often the title of the
passage that the chain ends in). Every span is a verbatim slice of its sentence, and
every sentence a verbatim slice of the passage, so a quote can always be found again.

spaCy is the pipeline ``entity_graph.entities.load_spacy`` loads (one copy per process);
a passage's parse is reduced to plain tuples and kept in a small LRU cache keyed by its
text, so a passage read again (the same documents in a loop's next step, or the next
question that retrieves it) costs a dictionary look-up.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from rag_graphs.entity_graph.entities import load_spacy, normalize

CACHE_SIZE = 4096
"""Parsed passages kept (each a few kilobytes of tuples)."""
MAX_CHARS = 20_000
"""Characters of one passage read at most (spaCy's parser costs grow with length; the answer of a
retrieved chunk is in its first pages)."""
_PRONOUNS = frozenset(
    "i me my we us our you your he him his she her it its they them their this that these those "
    "who whom which what there here one ones".split()
)
_WORD = re.compile(r"\w+")
_LEADING = re.compile(r"^(?:the|a|an|his|her|its|their|this|that|these|those)\s+", re.IGNORECASE)


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


@dataclass(frozen=True)
class ParsedSentence:
    """A sentence (verbatim), its lower-cased tokens and their stems, and the candidate spans in it."""

    text: str
    tokens: tuple[str, ...]
    spans: tuple[Span, ...]
    stems: tuple[str, ...]
    """Each token's stem, in order (a stem's position is its token's)."""


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


_CACHE: OrderedDict[tuple[str, str], ParsedPassage] = OrderedDict()
_LOCK = threading.Lock()


def split_title(text: str, title: str) -> str:
    """The passage body: ``text`` without a first line that is its ``title`` (stored chunks lead
    with it, ``eval.corpus``), so the title is not read as part of the first sentence."""
    if title and text.startswith(title):
        rest = text[len(title) :]
        if rest[:1] == "\n":
            return rest[1:]
    return text


def _chunk_text(text: str) -> str:
    return _LEADING.sub("", text).strip(" ,;:")


def _sentence(sent) -> ParsedSentence:
    """One spaCy sentence as tuples: entities first, then noun chunks that are not entities."""
    offset = sent.start_char
    base = sent.start
    spans: list[Span] = []
    seen: set[tuple[int, int]] = set()
    for ent in sent.ents:
        if ent.text.strip():
            spans.append(
                Span(
                    ent.text,
                    ent.label_,
                    ent.start_char - offset,
                    ent.end_char - offset,
                    ent.start - base,
                    ent.end - base,
                )
            )
            seen.add((ent.start_char, ent.end_char))
    for chunk in sent.noun_chunks:
        if (chunk.start_char, chunk.end_char) in seen or chunk.root.lower_ in _PRONOUNS:
            continue
        text = _chunk_text(chunk.text)
        if not text or text.lower() in _PRONOUNS:
            continue
        start = chunk.start_char - offset + chunk.text.find(text)
        spans.append(Span(text, "CHUNK", start, start + len(text), chunk.start - base, chunk.end - base))
    tokens = tuple(t.lower_ for t in sent)
    return ParsedSentence(sent.text, tokens, tuple(spans), tuple(stem(t) for t in tokens))


def _parse(doc, title: str) -> ParsedPassage:
    sentences = tuple(_sentence(s) for s in doc.sents if s.text.strip())
    keys = {normalize(span.text) for s in sentences for span in s.spans if span.label not in ("CHUNK",)}
    if title:
        keys.add(normalize(title))
    keys.discard("")
    return ParsedPassage(title, sentences, frozenset(keys))


def parse_passages(passages: Sequence[tuple[str, str]]) -> list[ParsedPassage]:
    """Each ``(title, body)`` parsed: cached ones looked up, the rest through one ``nlp.pipe``."""
    found: dict[int, ParsedPassage] = {}
    missing: list[int] = []
    with _LOCK:
        for i, key in enumerate(passages):
            hit = _CACHE.get(key)
            if hit is None:
                missing.append(i)
            else:
                _CACHE.move_to_end(key)
                found[i] = hit
    if missing:
        nlp = load_spacy(noun_chunks=True)
        docs = nlp.pipe([passages[i][1][:MAX_CHARS] for i in missing])
        parsed = {i: _parse(doc, passages[i][0]) for i, doc in zip(missing, docs, strict=True)}
        with _LOCK:
            for i, value in parsed.items():
                _CACHE[passages[i]] = value
                found[i] = value
            while len(_CACHE) > CACHE_SIZE:
                _CACHE.popitem(last=False)
    return [found[i] for i in range(len(passages))]
