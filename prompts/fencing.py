"""Untrusted text goes into prompts fenced as data.

Every piece of text the operator did not write (retrieved passages, tool
observations, web results, demonstration documents, text beside a picture) is
wrapped in ``<passage>`` ... ``</passage>``, and every prompt's instructions say
that fenced text is data, not instructions. A document cannot close the fence
early: any fence tag inside the text is defused first (``<`` and ``>`` become
``‹`` and ``›``), so all of it stays inside its own fence.

This narrows prompt injection; it cannot make a model immune to it. See
RELIABILITY.md for what is and is not guaranteed.
"""

from __future__ import annotations

import re

OPEN, CLOSE = "<passage>", "</passage>"
_TAG = re.compile(r"<\s*/?\s*passage\b[^>]*>", re.IGNORECASE)
FENCED = re.compile(r"<passage>\n.*?\n</passage>", re.DOTALL)
"""Matches one fenced block as ``fence`` writes it."""


def defuse(text: str) -> str:
    """``text`` with any passage fence tag made inert (``</passage>`` -> ``‹/passage›``)."""
    return _TAG.sub(lambda m: m.group(0).replace("<", "‹").replace(">", "›"), text)


def fence(text: str) -> str:
    """``text`` as one block of data: defused, between ``<passage>`` and ``</passage>`` lines."""
    return f"{OPEN}\n{defuse(text)}\n{CLOSE}"


def outside_fences(text: str) -> str:
    """What of ``text`` is not inside a fenced block (the part a model should treat as instructions)."""
    return FENCED.sub(" ", text)
