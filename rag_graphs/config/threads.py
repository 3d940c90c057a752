"""Where ``thread_id`` runs checkpoint (a SQLite file or a PostgreSQL URI), and one run per thread at a time.

``--checkpoints`` names a SQLite file (one machine) or a ``postgresql://`` /
``postgres://`` URI (``is_postgres``): a team serving the graphs keeps threads in
PostgreSQL, so a run killed on one worker resumes on another. The live savers are
built in ``rag_graphs.run.checkpointers``; this leaf module only reads the setting.

A file that is not SQLite (or is damaged) used to surface as a bare
``sqlite3.DatabaseError``; it is now refused naming the file and the setting.
Two runs of one thread at once (two terminals, the same ``--thread-id``) would
interleave their checkpoints into one history that is neither run: the second
is refused while the first runs. The lock is ``flock`` on a small file per
thread beside the checkpoints file, so the kernel releases it when its holder
exits, even by ``kill -9``: a killed run never leaves its thread locked.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from rag_graphs.support.locks import exclusive
from rag_graphs.support.redaction import redact, redact_url

SETTING = "--checkpoints"
DEFAULT_CHECKPOINTS = Path(".rag-graphs/checkpoints.sqlite")
"""Where ``thread_id`` checkpoints go unless told otherwise (relative to the working folder)."""
_SQLITE_HEADER = b"SQLite format 3\x00"


class CheckpointFileError(ValueError):
    """The checkpoints file cannot be used (a ``ValueError``: bad input, one clear message)."""


class ThreadBusy(RuntimeError):
    """Another run of the same thread holds its lock."""


POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(checkpoints: str | Path) -> bool:
    """Whether ``checkpoints`` is a PostgreSQL URI rather than a SQLite file.

    A ``Path`` never is: ``Path`` folds ``//`` into ``/``, so a URI must arrive as a string."""
    return isinstance(checkpoints, str) and checkpoints.strip().lower().startswith(POSTGRES_SCHEMES)


def unreachable(uri: str, why: object) -> CheckpointFileError:
    """The one-line error of a PostgreSQL checkpoints URI that cannot be used; the password (in
    the URI or quoted by the driver) is masked, and only the driver's first line is kept."""
    first = next((line.strip() for line in str(why).splitlines() if line.strip()), type(why).__name__)
    return CheckpointFileError(
        f"checkpoints database {redact_url(uri.strip())!r} ({SETTING}) cannot be used: {redact(first)}"
    )


def checkpoint_file(checkpoints: str | Path) -> str:
    """The resolved checkpoints path, its folder created; refused when it is not SQLite.

    Raises:
        CheckpointFileError: a folder, or an existing non-empty file that is not SQLite.
    """
    if str(checkpoints).lower().startswith(("postgresql:", "postgres:")):
        raise CheckpointFileError(  # not quoted: a folded URI has no host part to mask its password by
            f"checkpoints ({SETTING}) look like a PostgreSQL URI folded by Path ('//' became '/'): "
            "pass the URI as a str"
        )
    path = Path(checkpoints).expanduser().resolve()
    if path.is_dir():
        raise CheckpointFileError(f"checkpoints file {str(path)!r} ({SETTING}) is a folder; name a file")
    if path.is_file() and path.stat().st_size:
        with open(path, "rb") as handle:
            if handle.read(len(_SQLITE_HEADER)) != _SQLITE_HEADER:
                raise CheckpointFileError(_unusable(path, "not an SQLite file"))
    path.parent.mkdir(parents=True, exist_ok=True)
    return str(path)


def _unusable(path: Path | str, why: object) -> str:
    return (
        f"checkpoints file {str(path)!r} ({SETTING}) cannot be used: {why}. Move it aside (its "
        "threads cannot be resumed) or choose another file with --checkpoints"
    )


@contextlib.contextmanager
def damaged_as_error(path: str) -> Iterator[None]:
    """Turn a SQLite error of the checkpoints file met inside the block into ``CheckpointFileError``."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        raise CheckpointFileError(_unusable(path, exc)) from exc


@contextlib.contextmanager
def thread_lock(path: str, thread_id: str) -> Iterator[None]:
    """Hold ``thread_id``'s lock in the checkpoints file ``path`` for the block.

    Raises:
        ThreadBusy: another run (this process or another) holds it.
    """
    folder = Path(f"{path}.locks")
    folder.mkdir(parents=True, exist_ok=True)
    lock = folder / f"{hashlib.sha256(thread_id.encode()).hexdigest()[:32]}.lock"
    busy = ThreadBusy(
        f"thread {thread_id!r} is being run by another process right now (lock {lock}); "
        "wait for it to finish, then run again to get its result, or use another --thread-id"
    )
    with exclusive(lock, lambda: busy):
        yield


REPLAY_KEYS = ("rag_graphs_run", "rag_graphs_store_state")
"""Checkpoint metadata (flat strings: LangGraph keeps only those) naming what a run read: a finished
thread is replayed only for the same."""


def replay_key(method: str, question: str, ctx: object, store_state: str) -> dict[str, str]:
    """What makes a thread's stored result the answer to a new call: the method, the question, the
    store and collection, the access it was read under (tenant, tags, sources, filter) and the
    store's state (``store_state``: its row count and version marker), keyed as ``REPLAY_KEYS``.
    Another tenant, store, method, or a delete since, and the result is not served again (attack
    round 3: a thread replayed acme's passages to another tenant, and deleted text)."""
    fields = (
        "store_uri",
        "collection",
        "embeddings",
        "tenant",
        "tags",
        "sources",
        "search_filter",
        "search_mode",
    )
    values = [method, question, *(repr(getattr(ctx, name, None)) for name in fields)]
    own = getattr(ctx, "retriever", None)
    values.append(f"own:{id(own)}" if own is not None else "")  # a retriever of one process: never replayed
    digest = hashlib.sha256("\x1f".join(values).encode("utf-8")).hexdigest()[:32]
    return dict(zip(REPLAY_KEYS, (digest, store_state), strict=True))
