"""The evidence features of answer candidates: what the extractive reader's linear model scores.

Each feature is a number a person would check before believing a span is the answer
(``FEATURES`` in order; ``rag_graphs/data/reader_weights.json`` has one weight each):

``type``            the span has a label of the asked type (a DATE for "when")
``loose_type``      the span's label is one spaCy's small model often gives spans of the asked
                    type (a city tagged ORG or NORP; ``LOOSE_LABELS``)
``cue``             the word before the span is one that leads the asked type ("born *in*",
                    "directed *by*"; ``CUES``)
``capitalised``     the span starts with a capital letter, for a person, place or thing
``entity``          the span is a named entity (not only a passage's title)
``numeric``         a date or number for a question that asks neither
``head``            the question's head noun ("what *city*") is in the span (1) or its sentence (0.5)
``restates``        share of the span's words that are the question's (the rest never wins)
``sentence_words``  share of the question's words in the span's sentence or its passage's title
``near``            1 / (1 + tokens from the span to the nearest question word in its sentence)
``similarity``      cosine of the span's sentence with the question (0 without an embedder)
``rank``            1 / (1 + the passage's rank)
``agreement``       log(1 + other passages saying the same span, as words: ``_holders``)
``bridge``          the span's passage is named in another passage's sentence that holds the
                    question's words: that sentence's share of them (a bridge question's second hop)
``hop_onward``      share of the span's passage title's words in the question, when the passage
                    names another retrieved passage's title: a first hop, whose answer is the
                    next passage's (a passage about the question's entity that leads nowhere is
                    where a one-hop answer is, so it is not marked)
``first_sentence``  the span is in its passage's first sentence
``length``          words in the span, over 10 (capped at 1)
``life_date``       a date question about a birth (death): the span is its passage's first
                    (second) date, where biographies give them ("X (3 May 1950 - 1 June 2001)")
``relation``        the span's passage is the person the question's role leads to from a passage
                    it names ("the director of film X": X's passage names the director)
``other_title``     the span is the title of another retrieved passage
``own_title``       the span is its own passage's title

A table row is read as a sentence whose spans are its cells (``candidates.table_rows``), and its
column headers count as its words: a cell's ``head`` is its column naming the asked noun (the
"Capital" column for "what is the capital"), its ``near`` is 1 when its column is one of the
question's words, its ``bridge`` is the row reached through another of its cells (named by the
question, or by another passage's sentence holding the question's words: ``_row_bridge``), and
it has no ``cue``. So a cell is scored on the features a sentence's span is, with the same
weights: no table was in the data they were fitted on, and none needs a weight of its own.

Some spans are not candidates at all (type errors, not evidence to weigh): a span of a section's
heading line ("Career"), a date or a number for a person or place question, and, when the question
reaches a person through a role ("the founder of X", ``roles``), a span in no sentence about that
person, or (asked a place, date, number or kind) the person's own name ("Brandt" for "which
town"). Agreement still counts every passage that says a span.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from rag_graphs.store.keywords import STOP_WORDS
from rag_graphs.text.answer_types import ASKS_YEAR, NUMERIC_LABELS, YEAR, AnswerType
from rag_graphs.text.candidates import ParsedPassage, Span, normalize, stem
from rag_graphs.text.roles import (
    ABOUT_THEM,
    QUALIFIER,
    asks_about_role,
    is_one_of,
    relation_targets,
    role_people,
    speaks_of,
)
from rag_graphs.text.spans import DESCRIPTION, answer_spans, date_parts, description_spans, shaped

FEATURES = (
    "type",
    "loose_type",
    "cue",
    "capitalised",
    "entity",
    "numeric",
    "head",
    "restates",
    "sentence_words",
    "near",
    "similarity",
    "rank",
    "agreement",
    "bridge",
    "hop_onward",
    "first_sentence",
    "length",
    "life_date",
    "relation",
    "other_title",
    "own_title",
)
_EXTRA_STOP = frozenset("also name named called one both did does there been being into out".split())
_WORD = re.compile(r"\w+")
_BIRTH = re.compile(r"\b(?:born|birth|birthday)\b", re.IGNORECASE)
_DEATH = re.compile(r"\b(?:die|died|death|dead)\b", re.IGNORECASE)
HEADING = re.compile(r"[^.!?:;]{1,80}")
"""A heading line: short, with no sentence stop."""
LOOSE_LABELS = {
    "person": frozenset({"PERSON", "ORG", "TITLE"}),
    "place": frozenset({"GPE", "LOC", "FAC", "ORG", "NORP", "PERSON"}),
    "kind": frozenset({"NORP", "LANGUAGE", "ORG", DESCRIPTION}),
    "other": frozenset(
        {
            "ORG",
            "WORK_OF_ART",
            "EVENT",
            "PRODUCT",
            "LAW",
            "LANGUAGE",
            "NORP",
            "FAC",
            "GPE",
            "PERSON",
            "TITLE",
            DESCRIPTION,
        }
    ),
}
CUES = {
    "person": frozenset({"by", "with", "to"}),
    "place": frozenset({"in", "at", "from", "near", "of"}),
    "date": frozenset({"in", "on", "since", "until", "from", "born"}),
    "number": frozenset(),
    "kind": frozenset({"a", "an"}),
    "other": frozenset({"by", "of", "the", "in"}),
}
_HARD_TYPES = ("date", "number")
"""Types whose candidates must carry one of the type's labels: a "when" question over passages
without a date has no answer in them."""
_DESCRIBED = ("kind", "other")
"""Types whose answer may be a common noun a lead sentence describes its subject by
(``spans.description_spans``: "a genus of *flowering plants*")."""
_NAMED_TYPES = ("person", "place")
"""Types whose candidates are never a date or a number ("which town": not "1941")."""


@dataclass(frozen=True)
class Candidate:
    """One answer span with its features (``FEATURES`` order) and where it stands."""

    text: str
    label: str
    key: str
    doc_index: int
    sentence: int
    features: tuple[float, ...]
    bridge: tuple[int, int] | None
    """(passage, sentence) of the bridge sentence leading to this span's passage, or None."""


def content_words(text: str) -> frozenset[str]:
    """Stems of ``text``'s words that are not function words."""
    return frozenset(
        stem(w) for w in _WORD.findall(text.lower()) if w not in STOP_WORDS and w not in _EXTRA_STOP
    )


def asked_in(question: str, passages: list[ParsedPassage]) -> bool:
    """Whether a passage (its title or a sentence) holds one of ``question``'s content words. A
    question about something else ("What is the purpose of the passage?") has no answer in
    passages that never say its words, whatever span scores highest there."""
    words = content_words(question)
    return not words or any(
        words & p.title_stems or any(words & s.words for s in p.sentences) for p in passages
    )


def answer_key(text: str) -> str:
    """A span's identity for agreement and restatement: lower-case words, no leading article."""
    words = _WORD.findall(text.lower())
    if words and words[0] in ("the", "a", "an"):
        words = words[1:]
    return " ".join(words)


def _title_span(passage: ParsedPassage) -> tuple[str, str] | None:
    """The passage's title as a candidate: (text, label) of the entity spelling it in the first
    sentences, else (the title without its qualifier, ``TITLE``); None for a file's name that the
    passage never spells ("ilsa_brandt": an ingested file's title is its name)."""
    key = normalize(passage.title)
    for sentence in passage.sentences[:2]:
        for span in sentence.spans:
            if normalize(span.text) == key:
                return shaped(span, sentence.text).text, span.label
    if "_" in passage.title:
        return None
    return QUALIFIER.sub("", passage.title) or passage.title, "TITLE"


def _lead(passage: ParsedPassage) -> int:
    """The index of the passage's first sentence proper: a chunk's heading lines ("Early life",
    no closing stop) come before it."""
    return next(
        (i for i, sentence in enumerate(passage.sentences) if HEADING.fullmatch(sentence.text) is None), 0
    )


def _near(question_words: frozenset[str], stems: tuple[str, ...], span: Span) -> float:
    positions = [
        i for i, s in enumerate(stems) if s in question_words and not span.token_start <= i < span.token_end
    ]
    if not positions:
        return 0.0
    distance = min(
        span.token_start - i if i < span.token_start else i - span.token_end + 1 for i in positions
    )
    return 1.0 / (1.0 + max(distance, 0))


def _bridges(
    passages: list[ParsedPassage], words: frozenset[str]
) -> list[tuple[float, tuple[int, int] | None]]:
    """Per passage: the best share of question words of a sentence in another passage naming it."""
    found: list[tuple[float, tuple[int, int] | None]] = []
    for d, passage in enumerate(passages):
        key = normalize(passage.title)
        best: tuple[float, tuple[int, int] | None] = (0.0, None)
        if key:
            for p, other in enumerate(passages):
                if p == d or key not in other.keys:
                    continue
                for s, sentence in enumerate(other.sentences):
                    if not any(normalize(span.text) == key for span in sentence.spans):
                        continue
                    share = len(words & (sentence.words | other.title_stems)) / max(len(words), 1)
                    if share > best[0]:
                        best = (share, (p, s))
        found.append(best)
    return found


def _named_in(
    passages: list[ParsedPassage], d: int, name: str, words: frozenset[str]
) -> tuple[float, tuple[int, int] | None]:
    """The best share of question words of a sentence outside passage ``d`` that names ``name``,
    and where that sentence is."""
    pattern = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
    best: tuple[float, tuple[int, int] | None] = (0.0, None)
    for p, other in enumerate(passages):
        if p == d or normalize(name) not in other.keys:
            continue
        for s, sentence in enumerate(other.sentences):
            if pattern.search(sentence.text):
                share = len(words & (sentence.words | other.title_stems)) / max(len(words), 1)
                if share > best[0]:
                    best = (share, (p, s))
    return best


def _row_bridge(
    passages: list[ParsedPassage], d: int, s: int, cell: Span, words: frozenset[str], question: str
) -> tuple[float, tuple[int, int] | None]:
    """A table cell's ``bridge``: the row is reached through one of its other cells, named by the
    question itself (1) or by another passage's sentence holding the question's words (that
    sentence's share: "Korvik is a town in the province of *Asterra*" leads to Asterra's row)."""
    asked = f" {normalize(question)} "
    best: tuple[float, tuple[int, int] | None] = (0.0, None)
    for other in passages[d].sentences[s].spans:
        key = normalize(other.text)
        if other is cell or other.label in ("CARDINAL", "DATE") or not key:
            continue
        if f" {key} " in asked:
            return (1.0, None)
        found = _named_in(passages, d, other.text, words)
        if found[0] > best[0]:
            best = found
    return best


def _holders(raw: list, passages: list[ParsedPassage]) -> dict[str, set[int]]:
    """Per candidate key, the passages that say it: where it is a candidate, and every passage
    whose words hold it (NER reads only some sentences, ``reader.focus``: a span is matched as
    words, not as an entity, where spaCy did not read)."""
    said = [f" {' '.join(_WORD.findall(' '.join(s.text for s in p.sentences).lower()))} " for p in passages]
    holders: dict[str, set[int]] = {}
    for r in raw:
        holders.setdefault(r[2], set()).add(r[3])
    for key, found in holders.items():
        found.update(d for d, text in enumerate(said) if f" {key} " in text)
    return holders


def candidate_features(
    question: str,
    typed: AnswerType,
    passages: list[ParsedPassage],
    similarities: dict[tuple[int, int], float],
) -> list[Candidate]:
    """Every span of ``passages`` that is not a restatement of ``question``, with its features."""
    words = content_words(question)
    cues = CUES.get(typed.kind, frozenset())
    question_key = f" {answer_key(question)} "
    titles = {normalize(p.title): d for d, p in enumerate(passages) if p.title}
    bridges = _bridges(passages, words)
    targets = relation_targets(question, passages)
    life = 0 if _BIRTH.search(question) else 1 if _DEATH.search(question) else None
    date_order: dict = {}
    for d, passage in enumerate(passages):
        n = 0
        for s, sentence in enumerate(passage.sentences):
            for whole in sentence.spans:
                for span in date_parts(whole, sentence.text) if whole.label == "DATE" else ():
                    date_order[(d, s, span)] = n
                    n += 1
    leads = [_lead(passage) for passage in passages]
    onward = [float(any(k in p.keys for k in titles if titles[k] != d)) for d, p in enumerate(passages)]
    raw: list[tuple[str, str, str, int, int, Span | None]] = []
    for d, passage in enumerate(passages):
        title = _title_span(passage) if passage.title and passage.sentences else None
        if title is not None:
            raw.append((title[0], title[1], answer_key(title[0]), d, 0, None))
        for s, sentence in enumerate(passage.sentences):
            if 0 < s < leads[d] and not sentence.header:  # a section's heading ("Career") is no answer
                continue
            for whole in sentence.spans:
                for span in answer_spans(whole, sentence.text):
                    raw.append((span.text, span.label, answer_key(span.text), d, s, span))
        lead = passage.sentences[leads[d]] if typed.kind in _DESCRIBED and passage.sentences else None
        for span in description_spans(lead.text) if lead is not None and not lead.header else ():
            raw.append((span.text, span.label, answer_key(span.text), d, leads[d], span))
    raw = [r for r in raw if r[2] and f" {r[2]} " not in question_key]
    if typed.kind in _HARD_TYPES:
        raw = [r for r in raw if r[1] in typed.labels]
    if typed.kind == "date" and ASKS_YEAR.search(question):  # "in which year": not "the age of 14"
        raw = [r for r in raw if YEAR.search(r[0])] or raw
    holders = _holders(raw, passages)  # agreement counts every passage saying it, kept or not below
    if typed.kind in _NAMED_TYPES:  # a date or a number is never a person or a place
        raw = [r for r in raw if r[1] not in NUMERIC_LABELS]
    if typed.kind == "other":  # "which company": not "American"
        raw = [r for r in raw if r[1] != "NORP"]
    people = role_people(question, passages) if asks_about_role(question) else {}
    if people:  # the answer is about the person the role leads to, and (asked a place...) not them
        raw = [r for r in raw if speaks_of(people, passages[r[3]], r[4])]
        if typed.kind in ABOUT_THEM:  # not "other": "by what composer"
            raw = [r for r in raw if not is_one_of(normalize(r[0]), people)]
    out: list[Candidate] = []
    for text, label, key, d, s, found in raw:
        span_words = content_words(text)
        restates = len(span_words & words) / len(span_words) if span_words else 0.0
        if span_words and restates >= 1.0:
            continue
        passage = passages[d]
        sentence = passage.sentences[s]
        sentence_stems = sentence.words
        cell = found is not None and bool(found.column)  # a table cell
        column = content_words(found.column) if cell else frozenset()  # type: ignore[union-attr]
        head = 0.0
        if typed.head:
            head = (
                1.0
                if stem(typed.head) in span_words | column
                else 0.5
                if stem(typed.head) in sentence_stems
                else 0.0
            )
        similarity = similarities.get((d, s), 0.0)
        share, bridge_at = bridges[d]
        if cell:  # its row is where the bridge ends
            share, bridge_at = _row_bridge(passages, d, s, found, words, question)  # type: ignore[arg-type]
        title_words = content_words(passage.title)
        about = len(title_words & words) / len(title_words) if title_words else 0.0
        features = (
            float(label in typed.labels),
            float(label in LOOSE_LABELS.get(typed.kind, frozenset())),
            float(
                found is not None
                and not cell
                and found.token_start > 0
                and sentence.tokens[found.token_start - 1] in cues
            ),
            float(text[:1].isupper() and typed.kind in ("person", "place", "other")),
            float(label != "TITLE"),
            float(label in NUMERIC_LABELS and typed.kind not in ("date", "number")),
            head,
            restates,
            len(words & (sentence_stems | passage.title_stems)) / max(len(words), 1),
            1.0 if column & words else _near(words, sentence.stems, found) if found is not None else 0.0,
            similarity,
            1.0 / (1.0 + d),
            math.log1p(len(holders[key]) - 1),
            share,
            about * onward[d],
            float(s == leads[d] and not cell),
            min(len(key.split()), 10) / 10,
            float(
                typed.kind == "date"
                and life is not None
                and label == "DATE"
                and date_order.get((d, s, found)) == life
            ),
            float(d in targets),
            float(titles.get(normalize(text), d) != d),
            float(found is None),
        )
        bridge = targets.get(d) or (bridge_at if share > 0 else None)
        out.append(Candidate(text, label, key, d, s, features, bridge))
    return out
