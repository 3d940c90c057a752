"""Files converted and chunked ahead of the thread that embeds and stores them, by a budget of
chunks (``ahead``).

Why a budget of chunks, not a number of files: the main thread stores a group of EMBED_GROUP
chunks at a time, so the converter must have the next group ready when a group is done. With a
fixed 16 files ahead, a group of 1,000 HotpotQA passages (~240 files) left the main thread
waiting ~1.5 s for the converter at every group with one core idle, 5 s of a 38 s ingest
(BENCHMARKS.md, "Round 3: overlap"); a window of a group's files in files would hold a few big
PDFs' thousands of chunks. So conversion goes on while fewer than ``budget`` converted chunks
wait (and at least ``least`` files), and a file is submitted when a conversion ends or a file is
taken, not only when the consumer asks for the next one (it asks once per file, and not at all
while it stores a group).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")


class _Window(Generic[T]):
    """The files submitted and not yet taken; what conversion may start next (``fill``)."""

    def __init__(
        self,
        files: list[Path],
        prepare: Callable[[Path], T],
        pool: ThreadPoolExecutor,
        size: Callable[[T], int],
        limits: tuple[int, int, int],
    ) -> None:
        self.files, self.prepare, self.pool, self.size = iter(files), prepare, pool, size
        self.workers, self.budget, self.least = limits
        self.pending: deque[tuple[Path, Future[T]]] = deque()
        self.running = 0
        self.ready = 0  # chunks converted and not taken yet
        self.lock = threading.RLock()  # a callback added to a finished future runs at once, inside
        self.filling = False

    def fill(self) -> None:
        """Submit files while fewer than ``workers`` convert and the window has room, and always
        one when none waits untaken.

        The last clause is what keeps ``take`` from ending early: a consumer holding a finished
        file's result can ask for the next before the pool has run the ``_done`` callback that
        counts that conversion as ended (``Future.result`` returns before the callbacks run), so
        ``running`` still says a conversion runs while none waits to be taken; without it
        ``take`` found nothing pending and the ingest stopped there, the files after it never
        read nor reported (seen with NER off the main thread: 70 of 1,000 files, round 5)."""
        with self.lock:
            if self.filling:  # a conversion ended inside this loop: the loop goes on
                return
            self.filling = True
            try:
                while not self.pending or (
                    self.running < self.workers
                    and (len(self.pending) < self.least or self.ready < self.budget)
                ):
                    path = next(self.files, None)
                    if path is None:
                        return
                    self.running += 1
                    future = self.pool.submit(self.prepare, path)
                    self.pending.append((path, future))
                    future.add_done_callback(self._done)
            finally:
                self.filling = False

    def _done(self, future: Future[T]) -> None:
        with self.lock:
            self.running -= 1
            if not future.cancelled() and future.exception() is None:
                self.ready += self.size(future.result())
            self.fill()

    def take(self) -> tuple[Path, Future[T]] | None:
        """The next file in order (its conversion may still run), or None after the last."""
        with self.lock:
            self.fill()
            if not self.pending:
                return None
            path, future = self.pending.popleft()
        future.add_done_callback(self._taken)
        return path, future

    def _taken(self, future: Future[T]) -> None:
        """A taken file's chunks leave the window (once converted: the callback runs then)."""
        with self.lock:
            if not future.cancelled() and future.exception() is None:
                self.ready -= self.size(future.result())
            self.fill()


def ahead(
    files: list[Path],
    prepare: Callable[[Path], T],
    size: Callable[[T], int],
    *,
    workers: int = 1,
    budget: int = 512,
    least: int = 16,
) -> Iterator[tuple[Path, Future[T]]]:
    """``prepare(path)`` for each file in order, by ``workers`` threads, running ahead of the
    consumer while fewer than ``budget`` chunks (``size`` of a prepared file) wait converted, or
    fewer than ``least`` files were submitted and not taken."""
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ingest-convert") as pool:
        window = _Window(files, prepare, pool, size, (workers, budget, least))
        try:
            while (item := window.take()) is not None:
                yield item
        finally:
            window.files = iter(())  # a consumer that stops early starts no more conversions
