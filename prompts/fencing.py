"""Untrusted text goes into prompts fenced as data.

Every piece of text the operator did not write (retrieved passages, tool
observations, web results, demonstration documents, text beside a picture) is
wrapped in ``<passage>`` ... ``</passage>``, and every prompt's instructions say
that fenced text is data, not instructions. A document cannot close the fence
early: any fence tag inside the text is defused first (``<`` and ``>`` become
``‹`` and ``›``), so all of it stays inside its own fence. Look-alike tags are
defused too: a capable model may read ``<\u200b/passage>``, a fullwidth
``＜/passage＞`` or ``‹/passаge>`` (Cyrillic ``а``) as the end of its fence, so
tags are matched on a skeleton of the text (NFKC, zero-width and combining
characters dropped, confusable letters and brackets mapped to ASCII).

This narrows prompt injection; it cannot make a model immune to it. See
RELIABILITY.md for what is and is not guaranteed.
"""

from __future__ import annotations

import re
import unicodedata

OPEN, CLOSE = "<passage>", "</passage>"
_TAG = re.compile(r"<\s*/?\s*passage\b[^>]*>", re.IGNORECASE)
FENCED = re.compile(r"<passage>\n.*?\n</passage>", re.DOTALL)
"""Matches one fenced block as ``fence`` writes it."""


_LESS = "<‹〈⟨〈˂ᐸ＜﹤❮❬⧼"  # what a reader may take for "<" (＜ and ﹤ are "<" under NFKC)
_GREATER = ">›〉⟩〉˃ᐳ＞﹥❯❭⧽"
_LOOKALIKE = str.maketrans(
    {
        **dict.fromkeys(_LESS, "<"),
        **dict.fromkeys(_GREATER, ">"),
        **dict.fromkeys("⁄∕⧸／", "/"),
        **dict(zip("аеорсѕԁɡցαερѵ", "aeopcsdggaepv", strict=True)),  # Cyrillic, Latin, Greek
    }
)
_INVISIBLE = {"Cf", "Mn", "Me"}  # zero-width and format characters, combining marks


def defuse(text: str) -> str:
    """``text`` with any passage fence tag, or look-alike of one, made inert (``</passage>`` ->
    ``‹/passage›``): the tag's first and last character become ``‹`` and ``›``."""
    if text.isascii():
        return _TAG.sub(_inert, text)
    if not any(c in _LESS for c in text):
        return text  # no opening bracket of any kind: no tag (the common case, checked cheaply)
    skeleton, where = _skeleton(text)
    out, last = [], 0
    for match in _TAG.finditer(skeleton):
        start, end = where[match.start()], where[match.end() - 1] + 1
        out += [text[last:start], "‹", text[start + 1 : end - 1], "›"]
        last = end
    return "".join(out) + text[last:]


def _inert(match: re.Match[str]) -> str:
    return match.group(0).replace("<", "‹").replace(">", "›")


def _skeleton(text: str) -> tuple[str, list[int]]:
    """``text`` as a reader sees its shapes (NFKC, invisibles dropped, confusables mapped to
    ASCII, lower case), and for each of its characters the index it came from in ``text``."""
    chars: list[str] = []
    where: list[int] = []
    for i, original in enumerate(text):
        for char in unicodedata.normalize("NFKC", original):
            if unicodedata.category(char) in _INVISIBLE:
                continue
            for shape in char.translate(_LOOKALIKE).lower():
                chars.append(shape)
                where.append(i)
    return "".join(chars), where


def fence(text: str) -> str:
    """``text`` as one block of data: defused, between ``<passage>`` and ``</passage>`` lines."""
    return f"{OPEN}\n{defuse(text)}\n{CLOSE}"


def outside_fences(text: str) -> str:
    """What of ``text`` is not inside a fenced block (the part a model should treat as instructions)."""
    return FENCED.sub(" ", text)
