"""What two named items share: "What profession do A and B have in common?", "Who wrote lyrics for
both A and B?", "A and B are both this nationality?".

The answer is said in both items' passages, so it is read from both, not picked among one passage's
spans: a span scorer sees "German" in Angelique Kerber's lead and answers the sport question with it.
Each item's passage is the one titled as the question names it (``comparisons.named_items``); then

- a person, date, place or number is a span of the asked type that both passages hold (the lyricist
  both musicals' passages name);
- a nationality is a NORP value both leads say ("an American novelist", "an American historian");
- anything else is the description both leads give their subject ("X is an American film director,
  screenwriter and producer"): the longest run of words ending both an item of one lead's list and
  an item of the other's ("documentary film" of "a 2004 British documentary film" and "a 2011 African
  nature documentary film"), cut as the question asks: a profession is the run's last word (the
  "director" of "film director"), a sport or an industry the words before it (the "tennis" of "tennis
  player"), a kind or type the whole run. A profession only one lead lists may be said by the other
  passage as a verb ("directed by", when one item is a film): its stem must be there.

HotpotQA asks such questions about one in twenty times (17 of each dev half), and the span reader got
nearly all of them wrong (issue 51); with no shared answer the question goes back to it.
"""

from __future__ import annotations

import re

from rag_graphs.entity_graph.entities import normalize
from rag_graphs.text.answer_types import AnswerType
from rag_graphs.text.candidates import ParsedPassage, ParsedSentence, stems
from rag_graphs.text.comparisons import Decision, named_items
from rag_graphs.text.reader_features import HEADING, content_words
from rag_graphs.text.spans import COPULA, answer_spans

SHARED = re.compile(r"\b(?:in common|both)\b|\bshare[sd]?\s*(?:\?|$)", re.IGNORECASE)
"""A question about what its two items have in common ("... do A and B share?"; not "the county that
shares a border with ...")."""
_NATIONALITY = frozenset("nationality nationalities origin ethnicity citizenship".split())
_PROFESSION = frozenset("profession professions professional occupation occupations job jobs career".split())
_FIELD = frozenset("sport sports industry field business discipline".split())
_KIND = frozenset("kind kinds type types sort genre form category group style".split())
_ENTITY_KINDS = frozenset({"person", "date", "place", "number"})
_ATTRIBUTES = _NATIONALITY | _PROFESSION | _FIELD | _KIND
_LIST_END = re.compile(
    r"\s+(?:who|which|that|whose|where|when|from|in|on|at|for|by|with|based|founded|born|known|best|"
    r"located|since|created|directed|written|produced|released|published|owned|operated|formed|"
    r"starring|featuring)\b|\s*[;:()\[\]\"“”]|\s*\.(?:\s|$)|$"
)
_ITEM_SPLIT = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&)\s+")
_WORD = re.compile(r"[\w'-]+")
_LEADING = frozenset(
    "retired former late famous noted prominent well-known leading popular notable professional".split()
)
_FUNCTION = frozenset("of the a an and or in on for to with by".split())
_AGENT = re.compile(r"(?:er|or|ist|ian|ant|ent)$")
"""A noun of one who does something ("director", "novelist", "musician"): what a profession is."""


def asks_shared(question: str, typed: AnswerType) -> bool:
    """True for a span question about what two named items share (not a which-of-two or yes/no one):
    it says so ("both", "in common"), or asks two items' kind, profession or nationality ("What kind
    of film are A and B?")."""
    if typed.kind in ("which_of_two", "yes_no"):
        return False
    asked = {w.lower() for w in _WORD.findall(question)}
    return SHARED.search(question) is not None or bool("and" in asked and asked & _ATTRIBUTES)


def shared_answer(question: str, typed: AnswerType, passages: list[ParsedPassage]) -> Decision | None:
    """The answer both named items' passages give (see the module docstring), or None."""
    if not asks_shared(question, typed):
        return None
    items = named_items(question, passages)
    if len(items) != 2:
        return None
    a, b = items
    asked = {w.lower() for w in _WORD.findall(question)}
    if asked & _NATIONALITY:
        return _shared_span(question, AnswerType("kind", frozenset({"NORP"})), passages, a, b)
    if typed.kind in _ENTITY_KINDS:
        return _shared_span(question, typed, passages, a, b) if SHARED.search(question) else None
    cut = next((nouns for nouns in (_PROFESSION, _FIELD, _KIND) if asked & nouns), None)
    return _shared_description(cut, passages, a, b) if cut else None


def _spans(sentence: ParsedSentence, labels: frozenset[str]):
    for span in sentence.spans:
        if span.label in labels:
            yield from answer_spans(span, sentence.text)


def _shared_span(
    question: str, typed: AnswerType, passages: list[ParsedPassage], a: int, b: int
) -> Decision | None:
    """The span of the asked type both passages hold (by entity key, a year by its digits), not one
    the question names; of several, the one with more of the question's words beside it in either
    passage (two words before it, one after: "lyricist Howard Ashman" for "wrote lyrics", not "composer
    Alan Menken"), None at a tie."""
    asked, words = f" {normalize(question)} ", content_words(question)
    where: dict[str, dict[int, tuple[int, str]]] = {}  # key -> passage -> (sentence, text), first seen
    beside: dict[str, int] = {}  # key -> the question's words just before or after it, both passages
    for d in (a, b):
        for s, sentence in enumerate(passages[d].sentences):
            for span in _spans(sentence, typed.labels):
                key = _key(span.text, typed)
                if key and f" {normalize(span.text)} " not in asked:
                    where.setdefault(key, {}).setdefault(d, (s, span.text))
                    near = sentence.stems[max(span.token_start - 2, 0) : span.token_end + 1]
                    beside[key] = beside.get(key, 0) + len(words & set(near))
    both = sorted((k for k in where if len(where[k]) == 2), key=lambda k: -beside[k])
    if not both or (len(both) > 1 and beside[both[0]] == beside[both[1]]):
        return None
    (sa, text), (sb, _) = where[both[0]][a], where[both[0]][b]
    return Decision(text, 0.8, ((b, sb), (a, sa)), f"both items' passages say {text!r}")


def _key(text: str, typed: AnswerType) -> str:
    if typed.kind == "date":
        year = re.search(r"\b1[0-9]{3}\b|\b20[0-9]{2}\b", text)
        return year.group(0) if year else ""
    return normalize(text)


def description_items(sentence: str) -> list[list[str]]:
    """The things a lead sentence says its subject is, each as its words: "X is an American film
    director, screenwriter, and producer" -> [film director], [screenwriter], [producer]; leading
    names, numbers and words like "retired" or "professional" dropped (a nationality is asked apart)."""
    copula = COPULA.search(sentence)
    if copula is None:
        return []
    end = _LIST_END.search(sentence, copula.end())
    phrase = sentence[copula.end() : end.start() if end else len(sentence)]
    items = []
    for piece in _ITEM_SPLIT.split(phrase):
        words = _WORD.findall(piece)
        while words and (words[0][:1].isupper() or words[0][:1].isdigit() or words[0].lower() in _LEADING):
            words = words[1:]
        if words:
            items.append(words)
    return items


def _lead(passage: ParsedPassage) -> tuple[int, list[list[str]]]:
    """The first of a passage's first two sentences that describes its subject, and its items; an
    ingested chunk's heading lines ("Ilsa Brandt", "Early life") are passed over."""
    prose = [s for s, sentence in enumerate(passage.sentences) if not HEADING.fullmatch(sentence.text)]
    for s in prose[:2]:
        items = description_items(passage.sentences[s].text)
        if items:
            return s, items
    return 0, []


def _singular(word: str) -> str:
    word = word.lower()
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _common_end(x: list[str], y: list[str]) -> list[str]:
    n = 0
    while n < min(len(x), len(y)) and _singular(x[-1 - n]) == _singular(y[-1 - n]):
        n += 1
    return x[len(x) - n :]


def _shared_description(
    cut: frozenset[str], passages: list[ParsedPassage], a: int, b: int
) -> Decision | None:
    """The description both leads give, cut as the question asks (``cut``: the profession, field or
    kind nouns it names; module docstring)."""
    (sa, items_a), (sb, items_b) = _lead(passages[a]), _lead(passages[b])
    best: list[str] = []
    for x in items_a:
        for y in items_b:
            run = _common_end(x, y)
            if len(run) > len(best):
                best = run
        if best:
            break
    evidence = ((b, sb), (a, sa))
    if not best and cut is _PROFESSION:  # one item a film "directed by" the other, a director
        for (d, s, items), other in (((a, sa, items_a), b), ((b, sb, items_b), a)):
            said = {w for sentence in passages[other].sentences for w in sentence.stems}
            for words in items:
                if _AGENT.search(words[-1].lower()) and stems(words[-1]) <= said:
                    best, evidence = words[-1:], ((other, 0), (d, s))
                    break
            if best:
                break
    while best and best[0].lower() in _FUNCTION:  # "genus of flowering plants" and "genus of ..."
        best = best[1:]
    if not best:
        return None
    if cut is _PROFESSION:
        best = best[-1:]
    elif cut is _FIELD and len(best) > 1:
        best = best[:-1]
    answer = " ".join(best)
    return Decision(answer, 0.7, evidence, f"both items' leads describe them as {answer!r}")
