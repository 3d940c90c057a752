"""Data strings made safe to print on a terminal: the one place the CLI and reports pass them through.

File names, chunk text, questions and model answers are data. Printed raw, a
control character can move the cursor, recolour the terminal or set its title
(ANSI/OSC escapes), U+202E reverses what follows (a name that reads as another
file), and a newline forges a line of its own (a second ``FAILED`` line in an
ingest report). Printed through Rich with markup on, ``[/]`` or ``[bold]`` in
the data is read as markup and can end the run with ``MarkupError``.

``visible`` replaces every such character with a visible escape (``\\n``,
``\\x1b``, ``\\u202e``) and ``safe`` also escapes Rich markup, for text printed
with markup on. It lives in ``ingestion`` because ingest reports use it and
``ingestion`` cannot import ``rag_graphs``.
"""

from __future__ import annotations

import re

from rich.markup import escape

_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
"""Bidirectional marks, embeddings, overrides and isolates: they reorder what is shown."""
_LINES = "\u2028\u2029\x85"
_SURROGATES = "\ud800-\udfff"
"""Lone surrogates: a file name's bytes that are not UTF-8 (``os.fsdecode``'s surrogateescape,
U+DC80-U+DCFF for the bytes 0x80-0xFF). Printed, they fail the UTF-8 encoder ("surrogates not
allowed") or, under surrogateescape, go out as the raw bytes, 0x9B and 0x9D being C1 controls."""
_UNSAFE = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_BIDI}{_LINES}{_SURROGATES}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\x1b": "\\x1b"}


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte of a file name: shown as that byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: object) -> str:
    """``text`` with control characters (C0 but tab, DEL, C1), bidi controls, line separators
    and lone surrogates (a file name's undecodable bytes, shown as ``\\x9b``) replaced by visible
    escapes: one line, shown as written, nothing executed, always encodable as UTF-8."""
    return _UNSAFE.sub(_escape_char, str(text))


def safe(text: object) -> str:
    """``visible(text)`` with Rich markup escaped, for printing with markup on."""
    return escape(visible(text))
