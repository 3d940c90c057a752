"""What kind of answer a question asks for: the extractive reader's first step.

``question_kinds`` routes a question to a method (does it need retrieval, one hop or
several); this types the *answer*: a person, a place, a date, a number, one of two
compared items, yes or no, a kind of thing, or other. The reader proposes candidates
of that type first (spaCy entity labels in ``labels``), so "When was X born?" is not
answered with X's name. Rules on the question's words are enough here: the wh-word and
its head noun ("what city", "how many", "which film ..., A or B?") fix the type in
HotpotQA, 2Wiki and MuSiQue questions, and a rule is cheap, explainable and testable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PERSON_LABELS = frozenset({"PERSON"})
PLACE_LABELS = frozenset({"GPE", "LOC", "FAC"})
DATE_LABELS = frozenset({"DATE"})
NUMBER_LABELS = frozenset({"CARDINAL", "QUANTITY", "MONEY", "PERCENT"})
DURATION_LABELS = NUMBER_LABELS | {"DATE", "TIME"}
"""How long / how old: spaCy labels "12 years" and "50 years old" DATE."""
NUMERIC_LABELS = DURATION_LABELS | {"ORDINAL"}
KIND_LABELS = frozenset({"NORP", "LANGUAGE"})
OTHER_LABELS = frozenset({"ORG", "WORK_OF_ART", "EVENT", "PRODUCT", "LAW", "LANGUAGE", "NORP", "FAC"})
"""spaCy labels a right answer of each type usually carries."""

ANSWER_TYPES = ("person", "place", "date", "number", "which_of_two", "yes_no", "kind", "other")

_AUX = re.compile(
    r"^(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would|should|shall|may|might)\b",
    re.IGNORECASE,
)
_PLACE_NOUNS = frozenset(
    "city town country county state province region place village capital location continent "
    "island river mountain district borough municipality nation area neighborhood suburb".split()
)
_DATE_NOUNS = frozenset("year date decade century day month era".split())
_NUMBER_NOUNS = frozenset("population attendance capacity".split())
_PERSON_NOUNS = frozenset(
    "person man woman actor actress singer director author writer player king queen president "
    "musician artist composer poet son daughter father mother wife husband spouse brother sister "
    "founder producer politician leader coach footballer character novelist swimmer pitcher "
    "comedian comedienne rapper guitarist drummer bassist vocalist songwriter screenwriter playwright "
    "journalist painter sculptor architect boxer wrestler golfer athlete cyclist entrepreneur "
    "businessman businesswoman dancer lyricist inventor explorer senator governor mayor emperor "
    "prince princess duke pope bishop cartoonist animator illustrator presenter broadcaster "
    "economist historian philosopher scientist physicist mathematician chemist astronaut "
    "quarterback goalkeeper midfielder".split()
)
_KIND_NOUNS = frozenset(
    "kind type sort genre nationality form breed species genus sport profession occupation "
    "instrument language religion position job role".split()
)
_EARLIER = re.compile(
    r"\b(?:first|earlier|earliest|older|oldest|before|sooner|longer ago|born first|died first"
    r"|(?:been around|existed|in existence) longer)\b",
    re.I,
)
_LATER = re.compile(
    r"\b(?:later|last|latest|younger|youngest|(?:more|most) recent(?:ly)?|after|newer|second)\b", re.I
)
_LIFESPAN = re.compile(r"\blived (?:longer|the longest|shorter)\b", re.I)
_MORE = re.compile(r"\b(?:more|most|larger|largest|bigger|higher|highest|taller|longer|greater|many)\b", re.I)
_LESS = re.compile(r"\b(?:less|least|fewer|fewest|smaller|smallest|lower|lowest|shorter)\b", re.I)
_OPTIONS = re.compile(r"^(?P<lead>.*?),\s+(?P<a>[^?]+?),?\s+or\s+(?P<b>[^?]+?)\s*\??\s*$", re.S)
_BETWEEN = re.compile(
    r"^(?:in\s+)?between\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s*(?:,|\s(?=which|who|what))", re.I
)
_POLAR_OR = re.compile(
    r"^(?i:is|are|was|were|does|did|do|has|have)\s+(?:(?i:the)\s+)?(?P<a>[A-Z0-9][^?]*?)\s+or\s+(?:the\s+)?(?P<rest>.+)$"
)
_CAPITALISED = re.compile(r"(?:[A-Z0-9][\w'.&-]*)(?:\s+(?:(?:of|the|and|de|du|la|&|[A-Z0-9][\w'.&-]*)\b))*")
_SPLIT_B = re.compile(r",\s+")
_WORD = re.compile(r"[A-Za-z]+")
ASKS_YEAR = re.compile(r"\b(?:what|which) year\b|\byear (?:was|did|were)\b", re.IGNORECASE)
"""A question asking for a year: its answer is a span holding one (``YEAR``)."""
YEAR = re.compile(r"\b1[0-9]{3}\b|\b20[0-9]{2}\b")
_WH_WORD = re.compile(r"(?:^|[,;]\s*|\b(?:from|in|to|and)\s+)(when|where)\b")
"""A "when"/"where" that asks (at the start, after a comma or "from where"), not one in a
title ("the director of film When In Rome")."""


@dataclass(frozen=True)
class AnswerType:
    """The answer a question asks for.

    ``kind`` is one of ``ANSWER_TYPES``; ``labels`` the spaCy labels a right answer usually
    has; ``head`` the wh-phrase's noun ("city" in "what city"), lower case, or "";
    ``options`` the two compared items of a which-of-two question; ``direction`` how they
    compare: ``min`` (first, earlier, older), ``max`` (later, younger), ``more``/``less``
    (numbers), ``longer_life``/``shorter_life`` (lifespans), or "" when the question does not say.
    """

    kind: str
    labels: frozenset[str]
    head: str = ""
    options: tuple[str, ...] = ()
    direction: str = ""


def _polar_options(question: str) -> tuple[str, str] | None:
    """ "Was A or B founded first?": A after the auxiliary, B the capitalised run after "or"."""
    match = _POLAR_OR.match(question)
    if not match:
        return None
    b = _CAPITALISED.match(match.group("rest"))
    if not b:
        return None
    return match.group("a").strip(), b.group(0).strip()


_JOINERS = frozenset("of the and de du la von van del der & -".split())
_ASKS_WHICH = re.compile(r"^(?:which|who|whose|what)\b", re.IGNORECASE)
_LEADING = frozenset("which who whose what the of".split())


def _named_run(words: list[str]) -> list[str]:
    """The leading run of ``words`` that can be a name: capitalised or numeric words, and the
    joining words between them ("Battle of the Bulge")."""
    run: list[str] = []
    for word in words:
        if word[:1].isupper() or word[:1].isdigit() or (run and word.lower() in _JOINERS):
            run.append(word)
        else:
            break
    while run and run[-1].lower() in _JOINERS:
        run.pop()
    return run


def _loose_options(question: str) -> tuple[str, str] | None:
    """ "Which movie came out first Muppet Treasure Island or Million Dollar Arm?", "Who was born
    first out of Nick Grinde and Karel Reisz?", "Which airport is closer to the ocean: Wilmington
    Airport, or Texarkana Airport?": the two names either side of the last "or" (or, after "of"
    or "between", "and") when no comma sets them apart. Each side is a run of capitalised words;
    the wh-word and a leading year ("in 2015 Asheville Regional Airport") are not part of it. Only
    a question that compares ("first", "more", "higher", ``_direction``), asks "which of", or
    puts a colon before the names: "Who wrote Tom or Jerry?" names one title."""
    text = re.sub(r"([,:;])(?=\S)", r"\1 ", question.strip().rstrip("?").strip())
    if not _ASKS_WHICH.match(text):
        return None
    words = text.split()
    bare = [w.strip(",:;") for w in words]
    joints = [i for i, w in enumerate(bare) if w.lower() == "or"]
    ending = not joints  # "... of A and B": B ends the question
    if ending:
        joints = [i for i, w in enumerate(bare) if w.lower() == "and" and 0 < i < len(words) - 1]
        if not joints or not re.search(r"\b(?:of|between)\b", " ".join(bare[: joints[-1]]), re.I):
            return None
    at = joints[-1]
    skip = int(bare[at + 1 : at + 2] == ["the"])
    b = _named_run(bare[at + 1 + skip :])
    a: list[str] = []
    for i in range(at - 1, -1, -1):  # back from "or", to a comma or colon before the name
        if i < at - 1 and words[i][-1] in ",:;":
            break
        a.insert(0, bare[i])
    a = list(reversed(_named_run(list(reversed(a)))))
    start = at - len(a)
    while a and (
        a[0].lower() in _JOINERS
        or re.fullmatch(r"\d{1,4}", a[0])
        or (start == 0 and a[0].lower() in _LEADING)
    ):
        a, start = a[1:], start + 1
    compares = bool(_direction(text)) or re.match(r"^which of\b", text, re.I) or ":" in text
    if ending and at + 1 + skip + len(b) != len(bare):
        return None
    if not compares or not a or not b or len(a) > 8 or len(b) > 8 or start == 0:
        return None
    return " ".join(a), " ".join(b)


def _options(question: str) -> tuple[str, str] | None:
    """The two items "A or B" a question compares, or None."""
    match = _OPTIONS.match(question.strip())
    if match and match.group("lead").strip():
        a = match.group("a").strip()
        b = _SPLIT_B.split(match.group("b").strip())[0]
        if a and b and len(a) < 120 and len(b) < 120:
            return a, b.rstrip(",. ")
    match = _BETWEEN.search(question)
    if match:
        return match.group("a").strip(), match.group("b").strip()
    return None


def _direction(question: str) -> str:
    if _LIFESPAN.search(question):
        return "shorter_life" if "shorter" in question.lower() else "longer_life"
    if _EARLIER.search(question):
        return "min"
    if _LATER.search(question):
        return "max"
    if _LESS.search(question):
        return "less"
    if _MORE.search(question):
        return "more"
    return ""


_PHRASE_END = frozenset(
    "is was are were did does do has have had can could will would who that which whose whom "
    "of in on at for by from with to and or".split()
)
"""Words that end a wh-phrase ("What film *did* the actor ..."): its noun comes before."""


def _head(question: str) -> str:
    """The noun after the wh-word ("what city" -> "city", "what is the capital" -> "capital"):
    within three words, or five after a name or a number that none of them ends ("What American
    former competitive *swimmer*", "What 1958 born American television *writer*"; not "What film
    *did* the *actor* ...", nor "which university educated the *scientist*")."""
    written = _WORD.findall(question)
    words = [w.lower() for w in written]
    for i, word in enumerate(words):
        if word in ("what", "which", "whose"):
            first = written[i + 1] if i + 1 < len(written) else ""
            # "What *American* former swimmer", "What *1958* born ..." (the words skip numbers)
            modified = first[:1].isupper() or bool(re.search(rf"\b{word}\s+\d", question, re.I))
            ended = False
            for j, follower in enumerate(words[i + 1 : i + 6]):
                if j >= 3 and (ended or not modified):
                    break
                if follower in _PLACE_NOUNS | _DATE_NOUNS | _PERSON_NOUNS | _KIND_NOUNS:
                    return follower
                ended = ended or follower in _PHRASE_END
            if (
                words[i + 1 : i + 2]
                and words[i + 1] in ("is", "was", "are", "were")
                and "the" in words[i + 2 : i + 3]
            ):
                # "what was the (estimated) population / birth date of": the noun after "the"
                for follower in words[i + 3 : i + 5]:
                    if follower in _NUMBER_NOUNS | _DATE_NOUNS:
                        return follower
            following = words[i + 1 : i + 2]
            return (
                following[0] if following and following[0] not in ("is", "was", "are", "were", "did") else ""
            )
    return ""


def _asks_thing(lower: str) -> bool:
    """The question's first wh-phrase is "what/which <noun>" ("*What party* was the man who ..."):
    a "who" after it is a relative pronoun, not what is asked."""
    first = re.search(r"\b(who|whom|whose|what|which)\b\s*(\w*)", lower)
    return (
        first is not None
        and " whom" not in lower  # "... was assisted by whom?"
        and first.group(1) in ("what", "which")
        and first.group(2) not in ("", "is", "was", "are", "were", "did", "does", "do", "of")
    )


def column_label(header: str) -> str:
    """The spaCy label a table column's cells stand for, read off its header's nouns ("Capital"
    -> GPE, "Year founded" -> DATE, "Director" -> PERSON), or "" when the header names none of
    them: spaCy's small model labels cells torn out of their sentences at random."""
    words = {w.lower() for w in _WORD.findall(header)}
    for nouns, label in ((_DATE_NOUNS, "DATE"), (_PLACE_NOUNS, "GPE"), (_PERSON_NOUNS, "PERSON")):
        if words & nouns:
            return label
    return ""


def answer_type(question: str) -> AnswerType:
    """The answer type of ``question`` by its wh-word, head noun and "A or B" options."""
    text = " ".join(question.split())
    lower = text.lower()
    options = _options(text) or _polar_options(text) or _loose_options(text)
    head = _head(text)
    if options and not re.match(r"^(?:how many|how much)\b", lower):
        return AnswerType("which_of_two", frozenset(), head, options, _direction(text))
    if _AUX.match(lower):
        return AnswerType("yes_no", frozenset(), head)
    if re.search(r"\bhow (?:long|old)\b", lower):
        return AnswerType("number", DURATION_LABELS, head)
    if re.search(r"\bhow (?:many|much|far|tall|large|big|high)\b", lower) or head in _NUMBER_NOUNS:
        return AnswerType("number", NUMBER_LABELS, head)
    wh = _WH_WORD.search(lower)
    wh_word = wh.group(1) if wh else None
    if wh_word == "when" or head in _DATE_NOUNS:
        return AnswerType("date", DATE_LABELS, head)
    if head in _KIND_NOUNS:
        return AnswerType("kind", KIND_LABELS, head)
    if wh_word == "where" or head in _PLACE_NOUNS:
        return AnswerType("place", PLACE_LABELS, head)
    if head in _PERSON_NOUNS or (re.search(r"\b(?:who|whom|whose)\b", lower) and not _asks_thing(lower)):
        return AnswerType("person", PERSON_LABELS, head)
    return AnswerType("other", OTHER_LABELS, head)
