"""Which-of-two and yes/no questions: answers that are decided, not extracted.

"Which film came out first, A or B?" is answered by A's and B's dates; "Which film has the
director born earlier, A or B?" by the dates of the people A's and B's passages name (one
hop further, through the passage titled with that person); "Who lived longer" by the
spans between birth and death years; "Which is a comedy film, A or B?" (nothing to
compare) by which item's passage holds more of the question's words (the words both passages
hold cancel out), then by its best sentence's share of them. A polar question
("Are A and B both American?") is answered "yes" when every item it names has a passage
holding the asked property, "no" when one has a passage without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag_graphs.entity_graph.entities import normalize
from rag_graphs.store.keywords import STOP_WORDS
from rag_graphs.text.answer_types import AnswerType
from rag_graphs.text.candidates import ParsedPassage, stem
from rag_graphs.text.reader_features import content_words
from rag_graphs.text.roles import relation_hop
from rag_graphs.text.spans import date_parts

_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_MONTHS = {
    m: i
    for i, m in enumerate(
        "january february march april may june july august september october november december".split(), 1
    )
}
_DAY = re.compile(r"\b([0-3]?[0-9])\b")
_NUMBER = re.compile(r"\b\d[\d,]*(?:\.\d+)?\b")
_WORD_NUMBERS = {
    w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())
}
_DEATH = re.compile(r"\b(?:died|death|dead)\b", re.I)
_RELATION_OF_PERSON = re.compile(r"\b(?:born|older|younger|died|death|age|lived)\b", re.I)
_QUALIFIER = re.compile(r"\s*\([^)]*\)\s*$")
_COUNTED = re.compile(r"\b(?:more|most|fewer|fewest|less|least)\s+([a-z]+)(?:\s+([a-z]+))?", re.I)
_MEASURE = re.compile(r"\b(?:higher|highest|taller|tallest|elevation|height)\b", re.I)
_LENGTH = re.compile(r"\b(\d[\d,]*(?:\.\d+)?)\s?(m|metres|meters|ft|feet)\b", re.I)
_COUNT_WORD = re.compile(r"\d[\d,]*(?:\.\d+)?|[A-Za-z]+")
_ONE = frozenset({"single", "sole", "lone"})
_ASIDE = re.compile(r"\([^)]*\)")
_POLAR_COUNT = re.compile(
    r"\b(?:with|have|has|had|contain|contains|in)\s+(one|two|three|four|five|six|seven|eight|nine|ten|"
    r"eleven|twelve|\d{1,3})\s+([a-z]+)|\bsame\s+number\s+of\s+([a-z]+)",
    re.I,
)
"""A polar question about a count: "operas *with three acts*?", "*the same number of* acts?"."""


@dataclass(frozen=True)
class Decision:
    """A decided answer, how sure, the (passage, sentence) evidence in chain order, and why."""

    answer: str
    confidence: float
    evidence: tuple[tuple[int, int], ...]
    reason: str


def _overlap(a: str, b: str) -> float:
    wa, wb = set(normalize(a).split()), set(normalize(b).split())
    return len(wa & wb) / max(len(wa | wb), 1)


def bare_title(title: str) -> str:
    """``title`` without its trailing qualifier ("The Lady (magazine)" -> "The Lady"): a
    question names the item, the encyclopedia's title also says which one."""
    return _QUALIFIER.sub("", title) or title


def find_passage(name: str, passages: list[ParsedPassage], exclude: int | None = None) -> int | None:
    """The passage about ``name``: its title matching best (more than half its words), the
    title's qualifier aside; at equal match, a title as the name spells it (qualifier and all,
    or none) before a qualified one, then the higher-ranked passage; else None."""
    best: tuple[float, bool] | None = None
    at = None
    for d, passage in enumerate(passages):
        if d == exclude or not passage.title:
            continue
        full = _overlap(name, passage.title)
        score = max(full, _overlap(name, bare_title(passage.title)))
        key = (score, full >= score)
        if score > 0.5 and (best is None or key > best):
            best, at = key, d
    return at


def _date_key(text: str) -> tuple[int, int, int] | None:
    year = _YEAR.search(text)
    if not year:
        return None
    lower = text.lower()
    month = next((n for m, n in _MONTHS.items() if m in lower), 0)
    day_match = _DAY.search(text.replace(year.group(0), ""))
    day = int(day_match.group(1)) if day_match and month else 0
    return int(year.group(0)), month, day


def _dates(passage: ParsedPassage) -> list[tuple[tuple[int, int, int], int]]:
    """The passage's dates in reading order, each with its sentence."""
    found = []
    for s, sentence in enumerate(passage.sentences):
        for span in (part for whole in sentence.spans for part in date_parts(whole, sentence.text)):
            if span.label == "DATE":
                key = _date_key(span.text)
                if key:
                    found.append((key, s))
    return found


def _value(question: str, typed: AnswerType, passages: list[ParsedPassage], d: int):
    """The compared value of the item of passage ``d`` and its evidence, or None."""
    evidence: list[tuple[int, int]] = []
    if _RELATION_OF_PERSON.search(question):
        hop = relation_hop(passages, d, question)
        if hop is not None:
            evidence.append((d, hop[1]))
            d = hop[0]
    passage = passages[d]
    if typed.direction in ("more", "less"):
        found = (
            _counted(question, passage)
            or _measured(question, passage)
            or _first_number(question, typed, passage)
        )
        return (found[0], (*evidence, (d, found[1]))) if found else None
    dates = _dates(passage)
    if not dates:
        return None
    if typed.direction in ("longer_life", "shorter_life"):
        if len(dates) < 2:
            return None
        return dates[1][0][0] - dates[0][0][0], (*evidence, (d, dates[1][1]))
    if _DEATH.search(question) and len(dates) >= 2:
        return dates[1][0], (*evidence, (d, dates[1][1]))
    return dates[0][0], (*evidence, (d, dates[0][1]))


def _counted(question: str, passage: ParsedPassage) -> tuple[float, int] | None:
    """ "Which genus has more species?": the first count the passage puts before the counted noun
    ("about 150 species", "five members", "the sole species" and "a monotypic genus": one), at
    most one word between, with its sentence."""
    noun = _COUNTED.search(question)
    if noun is None:
        return None
    return _count_of({stem(w) for w in noun.groups() if w and w.lower() not in STOP_WORDS}, passage)


def _count_of(wanted: set[str], passage: ParsedPassage) -> tuple[float, int] | None:
    """The first count ``passage`` puts before a word of the stems ``wanted`` (see ``_counted``)."""
    for s, sentence in enumerate(passage.sentences):
        if "monotypic" in sentence.tokens:  # "a monotypic genus": one species
            return 1.0, s
        words = _COUNT_WORD.findall(_ASIDE.sub(" ", sentence.text))  # "three (originally four) acts"
        for i, word in enumerate(words):
            if stem(word) not in wanted:
                continue
            for before in words[max(i - 2, 0) : i][::-1]:
                number = 1.0 if before.lower() in _ONE else _as_number(before)
                if number is not None:
                    return number, s
    return None


def _counted_one(question: str, passages: list[ParsedPassage], where: tuple[int, int]) -> bool:
    """Whether the value read at ``where`` is a count of one the passage states ("the sole
    species", "a monotypic genus"), not a first number that happens to be "one"."""
    return _counted(question, passages[where[0]]) == (1.0, where[1])


def _measured(question: str, passage: ParsedPassage) -> tuple[float, int] | None:
    """ "Which mountain is higher?": the largest height or length the passage gives in metres or
    feet (a summit's elevation is its largest figure; "a 3 km ridge above 7400 m" is not 3)."""
    if not _MEASURE.search(question):
        return None
    best: tuple[float, int] | None = None
    for s, sentence in enumerate(passage.sentences):
        for match in _LENGTH.finditer(sentence.text):
            feet = match.group(2).lower().startswith("f")
            metres = float(match.group(1).replace(",", "")) * (0.3048 if feet else 1.0)
            if best is None or metres > best[0]:
                best = (metres, s)
    return best


def _first_number(question: str, typed: AnswerType, passage: ParsedPassage) -> tuple[float, int] | None:
    """The first number of a sentence holding the question's head noun or another of its words."""
    head = typed.head[:5] if typed.head else ""
    for s, sentence in enumerate(passage.sentences):
        if head and head not in sentence.stems and not (content_words(question) & set(sentence.stems)):
            continue
        for span in sentence.spans:
            if span.label in ("CARDINAL", "QUANTITY"):
                number = _as_number(span.text)
                if number is not None:
                    return number, s
    return None


def _as_number(text: str) -> float | None:
    match = _NUMBER.search(text)
    if match:
        try:
            return float(match.group(0).replace(",", ""))
        except ValueError:
            return None
    return next((float(v) for w, v in _WORD_NUMBERS.items() if re.search(rf"\b{w}\b", text.lower())), None)


def _best_sentence(passage: ParsedPassage, words: frozenset[str]) -> tuple[int, float]:
    best = (0, 0.0)
    for s, sentence in enumerate(passage.sentences):
        share = len(words & set(sentence.stems)) / max(len(words), 1)
        if share > best[1]:
            best = (s, share)
    return best


def compare_options(question: str, typed: AnswerType, passages: list[ParsedPassage]) -> Decision | None:
    """The option of a which-of-two question that the passages' evidence favours, or None."""
    found = [(option, find_passage(option, passages)) for option in typed.options]
    present = [(option, d) for option, d in found if d is not None]
    if not present:
        return None
    if typed.direction and len(present) == 2:
        values = [_value(question, typed, passages, d) for _, d in present]
        if all(v is not None for v in values):
            (va, ea), (vb, eb) = values
            if va != vb:
                smaller = va < vb
                pick_first = smaller if typed.direction in ("min", "less", "shorter_life") else not smaller
                option, evidence = (present[0][0], ea) if pick_first else (present[1][0], eb)
                other = eb if pick_first else ea
                return Decision(
                    option, 0.9, (*other[-1:], *evidence), f"compared {typed.direction}: {va} vs {vb}"
                )
        one = [
            i for i, v in enumerate(values) if v is not None and _counted_one(question, passages, v[1][-1])
        ]
        if typed.direction in ("more", "less") and len(one) == 1 and values[1 - one[0]] is None:
            # "the sole species" against a genus whose count is not given: it has at least one
            pick = one[0] if typed.direction == "less" else 1 - one[0]
            d = present[pick][1]
            return Decision(
                present[pick][0],
                0.7,
                (*values[one[0]][1][-1:], (d, _best_sentence(passages[d], content_words(question))[0])),
                f"compared {typed.direction}: one against a count not given",
            )
    words = content_words(question) - content_words(" ".join(typed.options))
    scored = []
    for option, d in present:
        held = len(words & frozenset(w for sentence in passages[d].sentences for w in sentence.stems))
        s, share = _best_sentence(passages[d], words)
        scored.append((held, share, -d, option, d, s))
    scored.sort(reverse=True)
    held, share, _, option, d, s = scored[0]
    margin = share - (scored[1][1] if len(scored) > 1 else 0.0)
    return Decision(
        option,
        0.5 + abs(margin) / 2,
        ((d, s),),
        f"its passage holds {held} of the question's words, a sentence {share:.0%} of them",
    )


def named_items(question: str, passages: list[ParsedPassage]) -> list[int]:
    """The passages whose titles the question names, in the question's order, at most two: a
    title as the question spells it, else without its qualifier; one passage per place named
    (the higher-ranked of two titled alike, "Proud Flesh (1925 film)" and "Proud Flesh (1915 film)"),
    and none for a title inside a longer one named ("Holland (surname)" in "André Holland")."""
    key = f" {normalize(question)} "
    named: dict[int, tuple[bool, int, int]] = {}
    for d, passage in enumerate(passages):
        for exact, title in ((True, passage.title), (False, bare_title(passage.title))):
            at = key.find(f" {normalize(title)} ") if normalize(title) else -1
            if at >= 0:
                if at not in named or (exact and not named[at][0]):
                    named[at] = (exact, d, at + len(normalize(title)))
                break
    spans = sorted(named.items())
    outer = [
        d
        for at, (_, d, end) in spans
        if not any((o, e) != (at, end) and o <= at and end <= e for o, (_, _, e) in spans)
    ]
    return outer[:2]


def _attributes(passage: ParsedPassage) -> set[str]:
    """The nationality-like values of a passage's first two sentences (NORP, else GPE)."""
    for labels in (("NORP",), ("GPE",)):
        found = {
            normalize(span.text) for s in passage.sentences[:2] for span in s.spans if span.label in labels
        }
        if found - {""}:
            return found - {""}
    return set()


def _alike(a: str, b: str) -> bool:
    """One value names the other: "german" and "east german", "france" and "france"."""
    wa, wb = set(a.split()), set(b.split())
    return bool(wa) and bool(wb) and (wa <= wb or wb <= wa)


def polar_answer(question: str, passages: list[ParsedPassage]) -> Decision | None:
    """ "yes" or "no" to a polar question (see the module docstring), or None without passages.

    "... the same nationality/country?" compares the items' (or their directors', ...) NORP or
    GPE values; otherwise the question's words other than the items' names must be in every
    item's passage for a "yes".
    """
    if not passages:
        return None
    items = named_items(question, passages)
    if len(items) < 2:
        s, _ = _best_sentence(passages[0], content_words(question))
        return Decision("yes", 0.5, ((0, s),), "polar question without two named items: yes by default")
    if re.search(r"\bsame\b", question, re.I):
        holders = []
        for d in items:
            hop = relation_hop(passages, d, question)
            holders.append(hop[0] if hop else d)
        values = [_attributes(passages[d]) for d in holders]
        if all(values):
            same = any(_alike(a, b) for a in values[0] for b in values[1])
            evidence = tuple((d, 0) for d in holders)
            return Decision("yes" if same else "no", 0.8, evidence, f"compared {values[0]} with {values[1]}")
    counts = _polar_count(question, passages, items)
    if counts is not None:
        return counts
    words = content_words(question) - {"both", "same"}
    for d in items:
        words -= passages[d].title_stems
    checked: list[tuple[int, int]] = []
    for d in items:
        s, share = _best_sentence(passages[d], words)
        checked.append((d, s))
        if words and share == 0.0:
            return Decision("no", 0.7, tuple(checked), f"passage {d + 1} lacks {sorted(words)}")
    return Decision("yes", 0.7, tuple(checked), "every named item's passage holds the asked words")


def _polar_count(question: str, passages: list[ParsedPassage], items: list[int]) -> Decision | None:
    """ "Are both A and B operas with three acts?": "yes" when every item's passage counts that
    many (``_count_of``), "no" when one counts otherwise; "the same number of acts?": whether the
    counts agree. None when the question asks no count or a passage gives none."""
    match = _POLAR_COUNT.search(question)
    if match is None:
        return None
    asked = None if match.group(3) else _as_number(match.group(1))
    found = [_count_of({stem((match.group(2) or match.group(3)).lower())}, passages[d]) for d in items]
    if any(f is None for f in found):
        return None
    values = [f[0] for f in found if f is not None]
    same = len(set(values)) == 1 and (asked is None or values[0] == asked)
    evidence = tuple((d, f[1]) for d, f in zip(items, found, strict=True) if f is not None)
    return Decision("yes" if same else "no", 0.8, evidence, f"compared counts {values} (asked {asked})")
