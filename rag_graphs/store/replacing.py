"""Replacing a changed file's chunks so that searches see one version, on a Milvus server too.

A changed file's new chunks are inserted before its old ones are deleted (a failed insert loses
nothing stored), so for a moment both versions are stored. Milvus has no transaction to hide
that, and on a server several processes write and search at once: a writer killed in between
used to leave both versions searchable (issue 40, item 11). One collection-wide record of the
files being replaced, rewritten by every writer, could not help: another writer's record
overwrote or cleared it (1 of 2 runs).

Now each replacement is a record of its own, a collection property named for its writer
(``PREFIX`` + a random id: no writer ever rewrites another's), in two states:

- ``inserting`` (before the new chunks go in): the new version stays hidden, the old one serves;
- ``committed`` (once the new chunks are all stored; the commit point): the old version is
  hidden, the new one serves; then the old chunks are deleted and the record dropped.

Every read of a server's chunk collection (``IndexReads.visible``) adds the filter these records
make (``hidden_filter``): one version of a file whatever the moment a writer is killed, and
nothing to repair before a search is correct. A Milvus Lite path needs no filter: one process
holds it, and it finishes or rolls back (``roll_back_inserting``) what a killed one left before
it reads anything. A killed writer's committed record is finished (old
chunks deleted, record dropped) by the next process that opens the collection or stores a
group (``finish_committed``): that is safe while its writer lives too, since it only does the
writer's own next step. A killed writer's ``inserting`` record cannot be told from a live
one's, so it stays and keeps its partial version hidden until the file is stored again, whose
commit drops every other record of that file. The filter costs one ``describe_collection`` per
read (search p50 +0.6 ms on a served collection of 5,000 chunks: RELIABILITY.md), and with no
record pending it is empty.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping
from typing import Any

from rag_graphs.store.fields import PRIMARY_FIELD, REPLACING_PROPERTY
from rag_graphs.store.filters import quote
from rag_graphs.store.writing import schema_change, store_lock

log = logging.getLogger(__name__)

PREFIX = "rag_graphs.replacing."
"""Collection property keys of replacements in flight: ``PREFIX`` + the writer's random id."""
INSERTING, COMMITTED = "inserting", "committed"


def pending(properties: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The replacement records among a collection's ``properties``: key -> ``{"state", "versions"}``
    (versions: source -> the new version's doc_hash); a damaged record is none."""
    found: dict[str, dict[str, Any]] = {}
    for key, value in (properties or {}).items():
        if not str(key).startswith(PREFIX) or not value:
            continue
        try:
            record = json.loads(value)
            versions = {str(s): str(h) for s, h in dict(record["versions"]).items()}
        except (ValueError, TypeError, KeyError):
            continue
        if record.get("state") in (INSERTING, COMMITTED):
            found[str(key)] = {"state": record["state"], "versions": versions}
    return found


def hidden_filter(properties: Mapping[str, Any] | None) -> str | None:
    """A Milvus filter admitting one version of each file being replaced (None: none is).

    A committed new version hides every other version of its file; otherwise each
    ``inserting`` version is hidden. ``not (...)``, so rows of other files pass whatever fields
    they have."""
    committed: dict[str, str] = {}
    inserting: dict[str, set[str]] = {}
    for record in pending(properties).values():
        for source, doc_hash in record["versions"].items():
            if record["state"] == COMMITTED:
                committed[source] = doc_hash
            else:
                inserting.setdefault(source, set()).add(doc_hash)
    hidden = [f"(source == {quote(s)} and doc_hash != {quote(h)})" for s, h in sorted(committed.items())]
    hidden += [
        f"(source == {quote(s)} and doc_hash in [{', '.join(quote(h) for h in sorted(hashes))}])"
        for s, hashes in sorted(inserting.items())
        if s not in committed
    ]
    return f"not ({' or '.join(hidden)})" if hidden else None


def _properties(index: Any) -> dict[str, Any]:
    return index.stored.properties()


class Replacement:
    """One writer's replacement of changed files (``versions``: source -> new doc_hash) in ``index``
    (a ``ChunkIndex``): ``begin`` before the insert, ``commit`` after it, ``end`` after the delete."""

    def __init__(self, index: Any, versions: dict[str, str]) -> None:
        self.index = index
        self.versions = dict(versions)
        self.key = PREFIX + uuid.uuid4().hex[:16]

    def _write(self, state: str, versions: dict[str, str]) -> None:
        value = json.dumps({"state": state, "versions": versions}, sort_keys=True)
        _set(self.index, self.key, value)
        self.index.mark_changed()  # a cached search made under the other filter is stale

    def begin(self) -> None:
        """Hide the new versions until they are all stored."""
        self._write(INSERTING, self.versions)

    def commit(self, stored: dict[str, str]) -> None:
        """The new versions of ``stored`` (all their chunks inserted) serve from now on, the old
        ones are hidden; other writers' records of these files are superseded and dropped."""
        with store_lock(self.index.uri):  # no other writer of this process between read and rewrite
            self._write(COMMITTED, stored)
            for key, record in pending(_properties(self.index)).items():
                if key != self.key and set(record["versions"]) & set(stored):
                    rest = {s: h for s, h in record["versions"].items() if s not in stored}
                    _rewrite(self.index, key, record["state"], rest)

    def end(self) -> None:
        """Drop the record: the old versions are deleted."""
        _rewrite(self.index, self.key, COMMITTED, {})


def _rewrite(index: Any, key: str, state: str, versions: dict[str, str]) -> None:
    """Store record ``key`` with ``versions``, or drop it when there are none."""
    value = json.dumps({"state": state, "versions": versions}, sort_keys=True) if versions else None
    _set(index, key, value)
    index.mark_changed()


def _set(index: Any, key: str, value: str | None) -> None:
    """Write the collection property ``key`` (drop it, for None): one store write at a time,
    tried again after a collision with another client's (``store.writing``)."""

    def change() -> None:
        if value is None:
            index.stored.drop_properties([key])
        else:
            index.stored.set_properties({key: value})

    schema_change(index.uri, f"collection {index.collection!r}'s property {key!r}", change)


def _version(source: str, doc_hash: str) -> str:
    """A Milvus filter: the rows of one version of one file."""
    return f"source == {quote(source)} and doc_hash == {quote(doc_hash)}"


def finish_committed(index: Any) -> int:
    """Finish the committed replacements killed writers left: delete the old versions, drop the
    records; the number finished. (A live writer's is finished for it: the same next step.)"""
    if not index._exists():
        return 0
    records = {k: r for k, r in pending(_properties(index)).items() if r["state"] == COMMITTED}
    for key, record in records.items():
        removed = index.delete_stale_many(record["versions"])
        _rewrite(index, key, COMMITTED, {})
        log.warning(
            "collection %r: finished replacing %d file(s) an interrupted ingest left committed "
            "(%d old chunks removed)",
            index.collection,
            len(record["versions"]),
            sum(removed.values()),
        )
    return len(records)


def roll_back_inserting(index: Any) -> int:
    """Delete the uncommitted new versions of ``inserting`` records and drop the records; the number
    rolled back. Only where no other writer can be alive: a Milvus Lite path, which its first
    process holds alone (so its searches need no filter: ``IndexReads.visible``)."""
    records = {k: r for k, r in pending(_properties(index)).items() if r["state"] == INSERTING}
    for key, record in records.items():
        for source, doc_hash in record["versions"].items():
            rows = index.stored.rows(
                f"source == {quote(source)} and doc_hash == {quote(doc_hash)}", [PRIMARY_FIELD]
            )
            index._delete_rows([r[PRIMARY_FIELD] for r in rows])
        _rewrite(index, key, INSERTING, {})
        log.warning(
            "collection %r: rolled back %d file(s) an interrupted ingest left uncommitted",
            index.collection,
            len(record["versions"]),
        )
    return len(records)


def finish_legacy(index: Any) -> None:
    """Finish the one collection-wide record of the versions before per-writer records (Milvus
    Lite, one writer): a file whose new version is stored loses the others; else keeps the old."""
    recorded = _properties(index).get(REPLACING_PROPERTY) or ""
    if not recorded:
        return
    try:
        versions = dict(json.loads(recorded))
    except (ValueError, TypeError):
        versions = {}
    landed = {
        source: doc_hash
        for source, doc_hash in versions.items()
        if index.stored.rows(
            f"source == {quote(source)} and doc_hash == {quote(doc_hash)}", [PRIMARY_FIELD], limit=1
        )
    }
    removed = index.delete_stale_many(landed)
    log.warning(
        "collection %r: finished replacing %d file(s) an interrupted ingest left half-done "
        "(%d old chunks removed)",
        index.collection,
        len(landed),
        sum(removed.values()),
    )
    _set(index, REPLACING_PROPERTY, "")
