"""Rewrite one generated section of BENCHMARKS.md, leaving the hand-written text alone."""

from __future__ import annotations

import re
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "BENCHMARKS.md"


def replace_section(name: str, body: str, *, heading: str) -> None:
    """Put ``body`` between ``<!-- name:begin -->`` and ``<!-- name:end -->`` (appended under
    ``heading`` the first time)."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    section = f"{begin}\n{body.strip()}\n{end}"
    text = BENCHMARKS.read_text(encoding="utf-8")
    if begin in text:
        text = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: section, text, flags=re.S)
    else:
        text = text.rstrip() + f"\n\n## {heading}\n\n{section}\n"
    BENCHMARKS.write_text(text, encoding="utf-8")
