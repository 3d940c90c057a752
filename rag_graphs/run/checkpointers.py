"""The checkpointer of a ``thread_id`` run, chosen by ``checkpoints``: a SQLite file or PostgreSQL.

A path is today's SQLite file (``SqliteSaver``, a ``flock`` per thread beside it:
``run.threads.thread_lock``). A ``postgresql://`` or ``postgres://`` URI is the
shared store of a team serving the graphs: a run killed on one worker resumes on
another from its last checkpoint (``PostgresSaver``; ``AsyncPostgresSaver`` for the
async entry points, since a sync saver refuses ``astream``).

One run per thread holds on PostgreSQL as it does on SQLite, with the same error
(``ThreadBusy``): the run's own connection takes a session-level advisory lock on the
thread (``pg_try_advisory_lock``), never waiting. A file lock could not do this, since
the workers share no file system; a row or a lease would outlive a ``kill -9`` and need
an expiry to guess. PostgreSQL releases a session's advisory locks when the session
ends, which a killed worker's does as its socket closes, so a killed run never leaves
its thread locked, and the lock is held exactly as long as the connection that writes
the run's checkpoints.

The tables are made on first use (``setup()``, once per URI in a process), under an
advisory lock of their own: two workers starting at once would otherwise race on the
migrations table. A URI that cannot be reached or used fails at once with one line
naming ``--checkpoints``, its password masked (``config.threads.unreachable``); a malformed
URI, or a value that is neither a SQLite file nor a PostgreSQL URI, is refused before any
connection or file (``config.threads.postgres_uri``, ``checkpoint_file``).
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_graphs.config.threads import (
    checkpoint_file,
    damaged_as_error,
    is_postgres,
    postgres_uri,
    unreachable,
)
from rag_graphs.run.threads import ThreadBusy, thread_lock

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

CONNECT_TIMEOUT = 10
"""Seconds to reach the server (libpq's ``connect_timeout``) unless the URI sets its own: an
unreachable host fails the run quickly instead of after the operating system's TCP timeout."""
SETUP_LOCK = int.from_bytes(hashlib.sha256(b"rag-graphs checkpoints setup").digest()[:8], "big", signed=True)
"""The advisory lock key under which one process at a time creates or migrates the tables."""
_set_up: set[str] = set()
_set_up_lock = threading.Lock()


def thread_key(thread_id: str) -> int:
    """``thread_id``'s advisory lock key: a signed 64-bit number from its SHA-256 (stable across
    processes and machines, unlike Python's ``hash``), in a namespace of its own."""
    digest = hashlib.sha256(b"rag-graphs thread\x1f" + thread_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


TRY_LOCK = "SELECT pg_try_advisory_lock(%s) AS held"
"""Take a thread's lock for the session, or answer false at once when another session holds it."""
UNLOCK = "SELECT pg_advisory_unlock(%s)"
"""Give it back (``_release``), as the run ends."""


def _held(row: Any) -> bool:
    return bool(row is not None and row["held"])


def _busy(thread_id: str) -> ThreadBusy:
    return ThreadBusy(
        f"thread {thread_id!r} is being run by another process right now (PostgreSQL advisory lock "
        f"{thread_key(thread_id)}); wait for it to finish, then run again to get its result, or use "
        "another --thread-id"
    )


def _connect_args(uri: str) -> dict[str, Any]:
    """What ``PostgresSaver.from_conn_string`` connects with, and a connect timeout by default."""
    from psycopg.rows import dict_row

    args: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    if "connect_timeout" not in uri:
        args["connect_timeout"] = CONNECT_TIMEOUT
    return args


@contextlib.contextmanager
def _postgres_errors(uri: str) -> Iterator[None]:
    """A PostgreSQL error of the database itself in the block (refused, authentication, a bad URI,
    no such database, the server gone, a missing privilege) as ``config.threads.unreachable``'s one
    line; an error of the data (``DataError``, ``IntegrityError``) stays itself."""
    import psycopg

    try:
        yield
    except (psycopg.OperationalError, psycopg.InterfaceError, psycopg.ProgrammingError) as exc:
        raise unreachable(uri, exc) from exc


def _needs_setup(uri: str) -> bool:
    with _set_up_lock:
        return uri not in _set_up


def _mark_set_up(uri: str) -> None:
    with _set_up_lock:
        _set_up.add(uri)


def _release(conn: Any, thread_id: str) -> None:
    """Give the thread's lock back before the connection closes. Closing alone releases it only
    when the server has ended the session, which it does after the client has gone: a second run
    of the thread right after the first was refused as busy (seen once in a full suite run)."""
    import psycopg

    with contextlib.suppress(psycopg.Error):  # a dead connection's session holds nothing
        conn.execute(UNLOCK, (thread_key(thread_id),))  # autocommit: no transaction to end


async def _arelease(conn: Any, thread_id: str) -> None:
    """``_release`` on an async connection."""
    import psycopg

    with contextlib.suppress(psycopg.Error):
        await conn.execute(UNLOCK, (thread_key(thread_id),))


@contextlib.contextmanager
def thread_saver(checkpoints: str | Path, thread_id: str) -> Iterator[BaseCheckpointSaver[Any]]:
    """The checkpointer of ``thread_id`` in ``checkpoints``, holding the thread's lock for the block.

    Raises:
        CheckpointFileError: a file that is not SQLite, or a database that cannot be used.
        ThreadBusy: another run of the thread holds its lock.
    """
    if not is_postgres(checkpoints):
        from langgraph.checkpoint.sqlite import SqliteSaver

        path = checkpoint_file(checkpoints)
        with thread_lock(path, thread_id), damaged_as_error(path):
            with SqliteSaver.from_conn_string(path) as sqlite_saver:
                yield sqlite_saver
        return
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    uri = postgres_uri(str(checkpoints))  # checked before any connection: one line, password masked
    with _postgres_errors(uri):
        conn = psycopg.Connection.connect(uri, **_connect_args(uri))
    with conn, _postgres_errors(uri):
        if not _held(conn.execute(TRY_LOCK, (thread_key(thread_id),)).fetchone()):
            raise _busy(thread_id)
        try:
            saver = PostgresSaver(conn)
            if _needs_setup(uri):
                conn.execute("SELECT pg_advisory_lock(%s)", (SETUP_LOCK,))
                try:
                    saver.setup()
                finally:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))
                _mark_set_up(uri)
            yield saver
        finally:
            _release(conn, thread_id)


@contextlib.asynccontextmanager
async def athread_saver(checkpoints: str | Path, thread_id: str) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """``thread_saver`` for async runs (``arun``, ``astream``): an async checkpointer."""
    if not is_postgres(checkpoints):
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        path = checkpoint_file(checkpoints)
        with thread_lock(path, thread_id), damaged_as_error(path):
            async with AsyncSqliteSaver.from_conn_string(path) as sqlite_saver:
                yield sqlite_saver
        return
    import psycopg
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    uri = postgres_uri(str(checkpoints))  # checked before any connection: one line, password masked
    with _postgres_errors(uri):
        conn = await psycopg.AsyncConnection.connect(uri, **_connect_args(uri))
    async with conn:
        with _postgres_errors(uri):
            cursor = await conn.execute(TRY_LOCK, (thread_key(thread_id),))
            if not _held(await cursor.fetchone()):
                raise _busy(thread_id)
            try:
                saver = AsyncPostgresSaver(conn)
                if _needs_setup(uri):
                    await conn.execute("SELECT pg_advisory_lock(%s)", (SETUP_LOCK,))
                    try:
                        await saver.setup()
                    finally:
                        await conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))
                    _mark_set_up(uri)
                yield saver
            finally:
                await _arelease(conn, thread_id)
