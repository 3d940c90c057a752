"""Progress bars that suit where they are written.

On a terminal, a live tqdm bar. In a notebook, tqdm's widget. Anywhere else (a log file, a
pipe, CI) a redrawn bar is one endless line of carriage returns, megabytes of it over a long
eval: there, one plain line is written each time another tenth of the work is done (or every
``every`` items when the total is unknown), and one at the end.

Every long loop of the package (ingest, graph build, RAPTOR, eval, corpus indexing) takes its
bar from ``progress_bar``, so the rule holds everywhere.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from typing import IO, Any

from tqdm import tqdm
from tqdm.autonotebook import tqdm as auto_tqdm

PLAIN_FORMAT = "{desc}: {n_fmt}/{total_fmt} ({percentage:.0f}%) [{elapsed}<{remaining}]{postfix}"
PLAIN_FORMAT_NO_TOTAL = "{desc}: {n_fmt} [{elapsed}]{postfix}"
EVERY_WITHOUT_TOTAL = 50


def is_terminal(stream: IO[str] | Any) -> bool:
    """True when ``stream`` is an interactive terminal (a bar can redraw itself in place)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class _Lines:
    """A stream that drops what tqdm writes only to move the cursor (bare newlines, ``\\r``)."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def write(self, text: str) -> None:
        if text.strip("\r\n "):
            self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()


class PlainProgress(tqdm):
    """tqdm that writes one whole line per ``every`` items done (and at the end), never ``\\r``."""

    def __init__(self, *args: Any, every: int, **kwargs: Any) -> None:
        self._every = max(1, every)
        self._shown: int | None = None
        super().__init__(*args, **kwargs)

    def display(self, msg: str | None = None, pos: int | None = None) -> bool:
        closing = self.disable  # ``close`` disables the bar before its last display
        if self._shown is not None and (
            self.n == self._shown or (not closing and self.n < self._shown + self._every)
        ):
            return True
        self._shown = self.n
        line = (msg if msg is not None else str(self)).replace("\r", "").strip()
        self.fp.write(line + "\n")
        self.fp.flush()
        return True


def progress_bar(
    iterable: Iterable[Any] | None = None,
    *,
    total: int | None = None,
    desc: str = "",
    unit: str = "it",
    disable: bool = False,
    file: IO[str] | None = None,
    **kwargs: Any,
) -> tqdm:
    """A progress bar over ``iterable`` (or updated by hand up to ``total``), suited to ``file``
    (stderr by default): live on a terminal or in a notebook, plain lines elsewhere."""
    stream = file if file is not None else sys.stderr
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    if disable or is_terminal(stream) or auto_tqdm is not tqdm:  # autonotebook: a widget in Jupyter
        return auto_tqdm(iterable, total=total, desc=desc, unit=unit, disable=disable, file=file, **kwargs)
    every = math.ceil(total / 10) if total else EVERY_WITHOUT_TOTAL
    return PlainProgress(
        iterable,
        total=total,
        desc=desc,
        unit=unit,
        file=_Lines(stream),
        every=every,
        mininterval=0,
        maxinterval=math.inf,  # tqdm's monitor thread would otherwise force a redraw every 10 s
        bar_format=PLAIN_FORMAT if total else PLAIN_FORMAT_NO_TOTAL,
        **kwargs,
    )
