"""The people a question reaches through a role ("the *director* of film X", "X's *father*",
"the *founder* of the Velmora Institute"): the extractive reader's hop from the passage the
question names to the person it asks about.

The named passage's sentence holding the role word names the person; their retrieved passage
(every chunk of their file) is where a bridge question's answer is (``relation_targets``), and
when the question asks something *about* them (a place, a date, a nationality), the answer is in
what is said about them, never their own name (``speaks_of``, ``is_one_of``): without the chunk that
says where the founder was born, the reader abstains instead of answering the founder's surname
or the institute's own city (issue 51 item 5).
"""

from __future__ import annotations

import re

from rag_graphs.text.candidates import ParsedPassage, Span, normalize, stem, stems

ROLES = frozenset(
    stem(w)
    for w in "director producer composer performer author writer father mother spouse wife husband "
    "founder creator screenwriter editor son daughter child".split()
)
QUALIFIER = re.compile(r"\s*\([^()]*\)\s*$")
"""A title's disambiguation ("Mayfair (magazine)"): not part of the answer."""
_ROLE_NOUNS = (
    "director|producer|composer|performer|author|writer|father|mother|spouse|wife|husband|founder|"
    "creator|screenwriter|editor|son|daughter|child"
)
_ROLE_OF = re.compile(rf"\b(?:{_ROLE_NOUNS})s?\s+of\b|['’]s?\s+(?:{_ROLE_NOUNS})\b", re.IGNORECASE)
"""A role that leads to another entity ("the *founder of* X", "X's *father*"), not a verb ("who
*founded* X") nor a title the question's own person holds ("the director Ilsa Brandt")."""
_OPENING = re.compile(
    r"^\W*(?:(?:in|at|from|to|for|by|of|on|with)\s+)?(?:which|what|where|when|who|whom|whose|how(?:\s+\w+)?)\b",
    re.IGNORECASE,
)
"""The question's own wh-phrase ("In which", "How many"), before any clause."""
_RELATIVE = re.compile(r"\b(?:where|which|that|whose|who|whom|when)\b", re.IGNORECASE)
ABOUT_THEM = ("place", "date", "number", "kind")
"""Answer types that say something about the role's person, never name them."""
_MISLABELLED = frozenset({"ORG", "GPE", "NORP"})
"""Labels spaCy's small model gives people ("directed by *Axel Braun*" ORG): a role's person
when a retrieved passage has their name as its title."""


def relation_hop(passages: list[ParsedPassage], d: int, question: str) -> tuple[int, int] | None:
    """(passage, sentence): the retrieved passage about the person passage ``d`` names in the role
    the question asks ("the *director* of film X", "X's *father*"), and the sentence of ``d``
    naming them; None when the question asks no role or ``d`` names nobody retrieved."""
    roles = stems(question) & ROLES
    if not roles:
        return None
    for s, sentence in enumerate(passages[d].sentences):
        if not roles & sentence.words:
            continue
        for span in sentence.spans:
            if span.label == "PERSON":
                key = normalize(span.text)
                for other, passage in enumerate(passages):
                    if other != d and key and normalize(passage.title) == key:
                        return other, s
    return None


def role_people(
    question: str, passages: list[ParsedPassage], *, named_too: bool = False
) -> dict[str, tuple[int, int]]:
    """The people the question reaches through its role ("the *founder* of X", "X's *father*"):
    each one's entity key -> (passage, sentence) of the sentence naming them in that role, in a
    passage the question names by its title. Found whether or not their own passage was
    retrieved: the answer is about them either way. A person the question names itself counts
    only with ``named_too`` (the answer is not them, but the role is resolved)."""
    roles = stems(question) & ROLES
    if not roles:
        return {}
    asked = f" {normalize(question)} "
    titles = {normalize(p.title) for p in passages}
    people: dict[str, tuple[int, int]] = {}
    for d, passage in enumerate(passages):
        title = normalize(QUALIFIER.sub("", passage.title))
        if not title or f" {title} " not in asked:
            continue
        for s, sentence in enumerate(passage.sentences):
            named = [
                (span, key)
                for span in sentence.spans
                if (key := normalize(span.text))
                and key != title  # X is not its own founder
                and (named_too or f" {key} " not in asked)
                and (span.label == "PERSON" or (span.label in _MISLABELLED and key in titles))
            ]
            for at in (i for i, word in enumerate(sentence.stems) if word in roles and named):
                span, key = min(named, key=lambda n: _distance(at, n[0]))
                people.setdefault(key, (d, s))
    return people


def asks_about_role(question: str) -> bool:
    """True when the question asks about the person a role leads to ("In which town was *the
    founder of X* born?"), not about something a clause further on reaches through them ("What
    is the capital of the province *where* the founder of X was born?": the answer is no
    sentence about the founder)."""
    found = _ROLE_OF.search(question)
    if found is None:
        return False
    before = _OPENING.sub("", question[: found.start()], count=1)
    return _RELATIVE.search(before) is None


def unresolved_role(question: str, passages: list[ParsedPassage]) -> bool:
    """True when the question reaches its answer through a role ("the founder of X"), a sentence
    of X's retrieved passages speaks of the role ("far from its *founder's* birthplace"), and they
    name nobody who could hold it: no one in the role's sentence, and no one with a retrieved
    passage of their own ("an organ chaconne by Johann Pachelbel. ... by the composer"). What is
    said about X is then no answer about its founder."""
    asked, roles = f" {normalize(question)} ", stems(question) & ROLES
    about_x = [
        p for p in passages if (title := normalize(QUALIFIER.sub("", p.title))) and f" {title} " in asked
    ]
    if not (asks_about_role(question) and any(roles & s.words for p in about_x for s in p.sentences)):
        return False
    titles = {normalize(p.title) for p in passages} - {normalize(p.title) for p in about_x}
    named = {normalize(span.text) for p in about_x for s in p.sentences for span in s.spans}
    return not (named & titles or role_people(question, passages, named_too=True))


def _distance(at: int, span: Span) -> tuple[int, int]:
    """Tokens from position ``at`` to ``span``, a span after it first at equal distance ("directed
    by *Axel Braun* and stars Chris Johnson")."""
    return (span.token_start - at, 0) if span.token_start > at else (at - span.token_end + 1, 1)


def relation_targets(question: str, passages: list[ParsedPassage]) -> dict[int, tuple[int, int]]:
    """Passage -> the (passage, sentence) leading to it by the question's role, from passages the
    question names (2Wiki's "Where was the father of X born?")."""
    key = f" {normalize(question)} "
    targets: dict[int, tuple[int, int]] = {}
    for d, passage in enumerate(passages):
        title = normalize(QUALIFIER.sub("", passage.title))
        if title and f" {title} " in key:
            hop = relation_hop(passages, d, question)
            if hop is None:
                continue
            person = normalize(passages[hop[0]].title)  # every chunk of the person's document
            for other, target in enumerate(passages):
                if other not in targets and other != d and normalize(target.title) == person:
                    targets[other] = (d, hop[1])
    return targets


def speaks_of(people: dict[str, tuple[int, int]], passage: ParsedPassage, s: int) -> bool:
    """True when sentence ``s`` of ``passage`` can say something about one of ``people``: the
    passage is theirs (its title), or the sentence names them (in full or by the last name,
    "Brandt was born in Korvik")."""
    if normalize(passage.title) in people:
        return True
    tokens = set(passage.sentences[s].tokens)
    return any(set(key.split()) <= tokens or key.split()[-1] in tokens for key in people)


def is_one_of(key: str, people: dict[str, tuple[int, int]]) -> bool:
    """True when the span ``key`` (its entity key) is one of ``people`` or part of a name
    ("Brandt" of "Ilsa Brandt")."""
    words = set(key.split())
    return bool(words) and any(words <= set(person.split()) for person in people)
