"""torch on one intra-op thread for a block, in the calling thread only (``one_thread``).

Why one thread: on these 2-core machines torch splits every forward pass over both cores, and for
a query, a few sentences or hundreds of entity names a few tokens each the split costs more than
it saves; with anything else running (a second request, llama.cpp, spaCy, ingest's other
embedding thread) torch's threads wait on each other at every pass (BENCHMARKS.md, "torch's
threads" and "Ingest throughput (issue 47)"). Its two callers: ``LocalEmbeddings`` (queries and
batches up to ``SMALL_CALL`` texts) and ``entity_graph.build.embed_on_one_thread`` (ingest's
chunk and entity-name embedding, each in a thread of its own beside spaCy).

What torch does (torch 2.13.0+cpu, checked with ``get_num_threads`` in threads, this package's
venv): ``torch.set_num_threads(n)`` sets the calling thread's own count (OpenMP's, per thread): a
thread already running keeps its count (2 stayed 2 while another thread set 1). It also sets one
process-wide value that a thread's first torch call (any, ``get_num_threads`` too) copies into that
thread's count: a thread created after another set 1, or created before but calling torch for the
first time after, starts on 1 and keeps it (over a count it set itself before that first call:
3 became 1). A new thread's ``set_num_threads(2)`` put the process-wide value back to 2 (new
threads got 2) without changing a running thread's 1. So the two earlier designs were wrong under
concurrency: a counted switch (the first in sets 1, the last out restores) left a call that came in
second on its own count and restored the first caller's count from the wrong thread; a save/restore
in a thread created inside another thread's block read 1 as its own count and, leaving last, left
the process-wide value at 1, so every thread created afterwards ran large batches on one thread.

So, per thread: the outermost ``one_thread`` of a thread reads that thread's count, sets 1, and
restores what it read; nested blocks do nothing. The process-wide value is guarded: the count the
process had when ``one_thread`` was first used (``_configured``, read once, before this module set
anything) is written back whenever a thread leaves with a count of its own that differs from it
(a thread created inside another's block leaves with 1), from a short-lived thread of this
module's (``set_num_threads`` in the leaving thread would change that thread's count too; ~1 ms,
and only then). Each block's last write is its restore or that reset, so once all blocks have
returned, new threads start on the configured count. Without torch imported nothing is set: no
torch model runs in the process.

Left as torch has it: a thread that first calls torch while a block is open elsewhere starts on 1
and keeps 1 for its calls outside ``one_thread`` (torch sets no thread's count without setting the
process-wide value), so a large batch in such a thread runs on one thread. A count the application
sets after the first use is its thread's; threads created later start on the first one.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_configured: int | None = None
"""torch's count when ``one_thread`` was first used: what threads created later must start on."""
_first_use = threading.Lock()
_local = threading.local()
"""``depth``: how many ``one_thread`` blocks the thread is in."""


@contextmanager
def one_thread() -> Iterator[None]:
    """The block's torch calls in this thread on one intra-op thread; the thread's own count after."""
    global _configured
    torch = sys.modules.get("torch")
    depth = getattr(_local, "depth", 0)
    _local.depth = depth + 1
    try:
        if torch is None or depth:
            yield
            return
        with _first_use:
            if _configured is None:
                _configured = torch.get_num_threads()
            default = _configured
        own = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(own)
            if own != default:
                _reset_default(torch.set_num_threads, default)
    finally:
        _local.depth = depth


def _reset_default(set_num_threads: Callable[[int], None], count: int) -> None:
    """torch's process-wide count put back to ``count`` from a thread of its own (which ends)."""
    helper = threading.Thread(target=set_num_threads, args=(count,), name="torch-threads-default")
    helper.start()
    helper.join()
