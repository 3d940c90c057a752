"""The fenced code blocks of the README and the ``docs/`` guides, for the tests that hold them true.

A block's language says how it is held: ``python`` runs as written on the embedded models after
``rag-graphs ingest`` of the demo corpus (``tests/e2e/test_readme.py``); ``py`` is a client of a
running server (the LangGraph server, MCP): compiled here, while the calls it shows run against
a real server in ``tests/server`` (``test_served_access.py``, ``test_mcp.py``); ``bash`` lines
that call ``rag-graphs`` or ``make`` must name real commands, options and targets; ``json``
must parse. A block with no language is text (a folder tree). ``tests/unit/test_docs.py`` holds
all but the ``python`` runs.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = (README, *sorted((ROOT / "docs").glob("*.md")))
LANGUAGES = frozenset({"python", "py", "bash", "json", ""})

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", flags=re.S | re.M)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Snippet:
    """One fenced block: the page it is on, its first line's number, its language and its text."""

    page: Path
    line: int
    lang: str
    code: str

    @property
    def name(self) -> str:
        """``README.md:47``, ``docs/settings.md:112``: where a failing block is."""
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def snippets(*langs: str) -> list[Snippet]:
    """Every fenced block of the README and the guides, in page order, of ``langs`` (none: all)."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            if not langs or match.group(1) in langs:
                line = text.count("\n", 0, match.start()) + 2  # the block's first line of code
                found.append(Snippet(page, line, match.group(1), match.group(2)))
    return found


def commands(snippet: Snippet, program: str) -> list[list[str]]:
    """The argument lists a ``bash`` block passes to ``program`` (``rag-graphs``, ``make``), one per
    command line: leading ``VAR=value`` assignments and a ``.venv/bin/`` prefix dropped, comments
    cut. Lines of other programs (``export``, ``langgraph``, a heredoc's body) are skipped."""
    found = []
    for line in snippet.code.splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:  # a heredoc's or a quoted block's inner line
            continue
        while words and _ASSIGNMENT.match(words[0]):
            words = words[1:]
        if words and words[0].removeprefix(".venv/bin/") == program:
            found.append(words[1:])
    return found
