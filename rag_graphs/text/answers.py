"""Answer text: stop sequences, scaffolding removal and the short answer the evaluator scores.

Small models run on past their answer into prompt scaffolding they invent
("... engineering. </passage> Question: Where did Ilsa Brandt grow up? Answer:").
Generation stops at the likeliest markers (``ANSWER_STOPS``); ``clean_answer``
cuts whatever got through, so no answer a user sees carries fence tags, prompt
labels or a repeated prompt. ``scaffolding`` is the detector the tests and
``bench/scaffold_rate.py`` share, so the measured rate is the property tested.

Answer prompts ask for the short answer alone on the first line, then the
explanation with citations; ``short_answer`` takes that first line back out, and
the evaluator scores it (FlashRAG's convention) while users read the whole answer.
"""

from __future__ import annotations

import re
from functools import cache

from rag_graphs.prompts import list_prompts, load_prompt

ANSWER_STOPS = ["</passage>", "<passage", "\nQuestion:", "\nPassages:"]
"""Stop sequences for answer calls: at most 4 (OpenAI's limit), the markers small models invent first."""

UNKNOWN = "I do not know."
"""What an answer that was nothing but scaffolding becomes."""

# Fence tags, chat-template tokens, and the labels our templates put before their fields,
# at the start of a line ("Question:", "Passages:", "[human]"...).
_MARKERS = re.compile(
    r"</?passage\b[^>]*>?|<\|im_(?:start|end)\|>|<\|endoftext\|>"
    r"|^[ \t]*\[(?:system|human|ai)\][ \t]*$"
    r"|^[ \t]*(?:Question|Passages|Documents|Search query|Facts found so far|Short answer|Answer)[ \t]*:",
    re.MULTILINE | re.IGNORECASE,
)
# A leading label the model writes before its answer ("Answer: Korvik") is a label, not scaffolding.
_LEADING_LABEL = re.compile(r"^\s*(?:final\s+|short\s+)?answer\s*:\s*", re.IGNORECASE)
_CITATION = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")
_MIN_ECHO = 30  # a prompt line at least this long found in an answer is the prompt repeated


@cache
def _prompt_lines() -> tuple[str, ...]:
    """The fixed lines of every shipped template's system message (placeholders aside)."""
    lines: set[str] = set()
    for name in list_prompts():
        for message in load_prompt(name).messages:
            text = getattr(getattr(message, "prompt", None), "template", "")
            for line in str(text).splitlines():
                line = line.strip()
                if len(line) >= _MIN_ECHO and "{" not in line:
                    lines.add(line.lower())
    return tuple(sorted(lines))


def _first_scaffold(text: str) -> tuple[int, str] | None:
    """Position and text of the first scaffolding in ``text`` (after a leading label), or None."""
    hits: list[tuple[int, str]] = []
    match = _MARKERS.search(text)
    if match:
        hits.append((match.start(), match.group(0).strip()))
    lowered = text.lower()
    for line in _prompt_lines():
        at = lowered.find(line)
        if at >= 0:
            hits.append((at, text[at : at + len(line)]))
    return min(hits) if hits else None


def scaffolding(answer: str) -> str | None:
    """The first piece of prompt scaffolding in ``answer`` (a fence tag, a prompt label such as
    "Question:", a line of one of our prompts), or None when the answer is clean."""
    found = _first_scaffold(_LEADING_LABEL.sub("", answer, count=1))
    return found[1] if found else None


def clean_answer(text: str) -> str:
    """``text`` without a leading "Answer:" label and cut before the first scaffolding.

    An answer that was nothing but scaffolding becomes ``UNKNOWN``: the model said nothing.
    """
    text = _LEADING_LABEL.sub("", text.strip(), count=1)
    found = _first_scaffold(text)
    if found:
        text = text[: found[0]]
    return text.strip() or UNKNOWN


def short_answer(answer: str) -> str:
    """The short answer: the first non-empty line, without a label, citations or final period.

    Answer prompts put it alone on the first line; a model that ignores that and
    writes one sentence gets the sentence scored, as before.
    """
    for line in clean_answer(answer).splitlines():
        line = _CITATION.sub("", _LEADING_LABEL.sub("", line)).strip()
        if line:
            return line.rstrip(".").strip()
    return ""
