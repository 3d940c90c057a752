"""One holder at a time: an exclusive ``flock`` on a small file, which the kernel releases when its
holder exits, even by ``kill -9``, so a killed process never leaves it held."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Callable, Iterator
from pathlib import Path


@contextlib.contextmanager
def exclusive(path: Path, busy: Callable[[], BaseException]) -> Iterator[None]:
    """Hold the lock file ``path`` for the block; raise ``busy()`` at once when another holds it."""
    with open(path, "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy() from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
