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

So, per thread: ``one_thread`` reads the calling thread's count and, unless it is 1 already, sets 1
and restores what it read. A thread on 1 writes nothing: a block nested in another, and a thread
created inside another thread's block (its first call found 1), leave torch alone, so no restore
ever writes a value it did not read from its own thread, and the only writes of 1 are entries that
the same thread's restore (not 1) follows. Once all blocks have returned, the count new threads
start on is the last restore's, the count its thread had before: never the blocks' 1. The
process's configured count needs no remembering. Without torch imported nothing is set: no torch
model runs in the process.

Left as torch has it: a thread that first calls torch while a block is open elsewhere starts on 1
and keeps 1 for its calls outside ``one_thread`` (torch sets no thread's count without setting the
process-wide value), so a large batch in such a thread runs on one thread.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def one_thread() -> Iterator[None]:
    """The block's torch calls in this thread on one intra-op thread; the thread's own count after."""
    torch = sys.modules.get("torch")
    own = torch.get_num_threads() if torch is not None else 1
    if torch is None or own == 1:  # on one thread already: nothing to set, nothing to restore
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(own)
