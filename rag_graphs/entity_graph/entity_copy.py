"""An in-process copy of a chunk collection's entity rows (key, name, chunk list, count), one per
store state, for graph search's entity reads by key without Milvus Lite's round trips (issue 47,
round 6).

Why: graph search reads entity rows by key twice per question, the linking's few hundred keys (the
question's mentions and name-like n-grams, most of them no entity) and the neighbourhood's frontier
(the entities of the seeds' chunks and the first hits, hundreds); the row cache
(``rows.RowCache``) answers a key another question read before, and every other key is a Milvus Lite
query, ~0.1 ms a key plus the round trip. At 21k passages (124,537 entities) those misses were
most of the neighbourhood lap (~18 ms p50; 100-880 ms on the 8% of questions with the largest
neighbourhoods, 2,000-2,600 keys read). Held whole, every key is a dict look-up (the lap ~6 ms p50),
and a key the copy lacks is a key the store lacks (BENCHMARKS.md, "Graph search latency, round 6").

Where it applies, as the chunk copy (``store.mirror``) it is read beside: graph search asks for it
only where it has the chunk copy (a Milvus Lite path, a search without a filter, ``in_process``), at
most ``MAX_COPIED_ENTITIES`` rows; keyed by the same store state (``rows.graph_state``, which a
write, delete, relabel or graph build of any process changes: the entity collection's row count
and update time are part of it), so it follows every change the row cache follows. Entity rows
belong to no file and no filter ever applies to them; the copy holds the fields the row cache holds
(``rows.ENTITY_ROW_FIELDS``), packed as it packs them, and a read projects them as it does, so a
read from the copy returns what a read from the store returns (unit test, and the same top five
with the same scores on every latency question).
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable

from rag_graphs.entity_graph.rows import COUNT_FIELD, ENTITY_ROW_FIELDS, _packed, entity_table
from rag_graphs.store.fields import PRIMARY_FIELD
from rag_graphs.store.index import ChunkIndex
from rag_graphs.store.lite import is_local

log = logging.getLogger(__name__)

MAX_COPIED_ENTITIES = 500_000
"""Entity rows a copy holds at most (the 21k mixed store's 124,537 took 36 MB held, a transient
peak of ~270 MB while read, 10-13 s; BENCHMARKS.md, "Graph search latency, round 6"); a larger
entity collection is read through the row cache, by key."""
SETTLE_AT = 20_000
"""Entity rows from which a new copy is followed by ``_settle``: below it the copy adds too few
objects to lengthen a collection, and a full collection costs ~1.3 s in a process with torch and
spaCy loaded (the unit tests made 331 small copies, 7 min of collections over two workers)."""
COPIED_STORES = 2
"""Collections whose entity copies a process keeps (the least recently searched go first), as
``store.mirror.MIRRORED_STORES``."""
ALL_ROWS = f"{COUNT_FIELD} >= 0"
"""The filter of the copy's one query: every entity row (``rows.COUNT_FIELD``, a chunk count)."""

EntityCopy = dict[str, tuple]
"""Entity key -> its row packed as the row cache packs it (``rows._packed`` over
``rows.ENTITY_ROW_FIELDS``)."""

_COPIES: OrderedDict[tuple[str, str], tuple[Hashable, EntityCopy | None]] = OrderedDict()
_LOCK = threading.Lock()


def entity_copy(index: ChunkIndex, state: Hashable) -> EntityCopy | None:
    """The copy of ``index``'s entity rows for ``state`` (read now if this process holds none for
    it), or None where none applies: not a Milvus Lite path, no entity collection, more than
    ``MAX_COPIED_ENTITIES`` rows. ``state`` must be the store's ``graph_state`` read just before."""
    if not is_local(index.uri):
        return None
    where = (index.uri, index.collection)
    with _LOCK:  # one read at a time: searches of one new state wait for the first's read
        held = _COPIES.get(where)
        if held is None or held[0] != state:
            held = _COPIES[where] = (state, _read(index))
            if held[1] is not None and len(held[1]) >= SETTLE_AT:
                _settle()
        _COPIES.move_to_end(where)
        while len(_COPIES) > COPIED_STORES:
            _COPIES.popitem(last=False)
    return held[1]


def _read(index: ChunkIndex) -> EntityCopy | None:
    """Every entity row with the row cache's fields, packed; None when there is no entity
    collection or it is over the bound."""
    table = entity_table(index)
    if not table.load():  # none (loaded, as a search needs it: a stored collection starts released)
        return None
    count = table.count()
    if count > MAX_COPIED_ENTITIES:
        log.info("collection %r: %d entities, read by key (over %d)", table.name, count, MAX_COPIED_ENTITIES)
        return None
    start = time.perf_counter()
    copied: EntityCopy = {}
    # one query for every row (Milvus Lite pays ~1.3 s of Python per query over every stored row
    # version at 125k entities: pages of 16,384 by key took 18.5 s, this one 10 s); its filter
    # admits every row (a count is never negative) and bounds them, so no limit is needed
    for row in table.rows(ALL_ROWS, [PRIMARY_FIELD, *ENTITY_ROW_FIELDS]):
        packed = _packed(row, ENTITY_ROW_FIELDS)
        assert packed is not None
        copied[str(row[PRIMARY_FIELD])] = packed
    if len(copied) != count:  # written meanwhile (the next state reads it again): read by key now
        log.info(
            "collection %r: %d entity rows read, %d counted: read by key", table.name, len(copied), count
        )
        return None
    log.info(
        "collection %r: %d entity rows read in %.1f s", table.name, len(copied), time.perf_counter() - start
    )
    return copied


def _settle() -> None:
    """Move what the process holds now (the copies just read, the store's own pages, the models)
    out of the collector's way: one full collection, then ``gc.freeze``.

    Why: a full collection walks every tracked object, and with a 21k-passage store open that
    took 650-710 ms, landing inside a search now and then (three of the 300 latency questions,
    BENCHMARKS.md, "Graph search latency, round 6"). Frozen objects are still freed when nothing
    refers to them; only cycles among them wait, so each new state first unfreezes the last
    state's (the collection below can free them) and freezes again: at most one state's
    cyclic garbage is held."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
