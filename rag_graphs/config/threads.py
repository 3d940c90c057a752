"""Where ``thread_id`` runs checkpoint: a SQLite file or a PostgreSQL URI (the setting only).

``--checkpoints`` names a SQLite file (one machine) or a ``postgresql://`` /
``postgres://`` URI (``is_postgres``): a team serving the graphs keeps threads in
PostgreSQL, so a run killed on one worker resumes on another. The live savers are
built in ``rag_graphs.run.checkpointers``; this leaf module only reads the setting.

The setting is parsed strictly, since whatever was not a URI used to be taken for a path: a
SQLite file is a path whose name ends in ``.sqlite``, ``.sqlite3`` or ``.db`` (or
``sqlite:///path``, or an existing SQLite file of any name), and a URI is checked before any
connection (``postgres_uri``). Anything else (``postgresql+psycopg://``, ``jdbc:postgresql://``,
libpq's ``host=... password=...``) is refused in one line that masks its password
(``shown``), before anything is made on disk: such a value used to become folders and lock
files named with the password under the working folder.

A file that is not SQLite (or is damaged) used to surface as a bare
``sqlite3.DatabaseError``; it is now refused naming the file and the setting.
One run per thread at a time and a thread's replay key are the runs' own (``rag_graphs.run.threads``).
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

from rag_graphs.support.redaction import MASK, SECRET_NAME, mask, redact

SETTING = "--checkpoints"
DEFAULT_CHECKPOINTS = Path(".rag-graphs/checkpoints.sqlite")
"""Where ``thread_id`` checkpoints go unless told otherwise (relative to the working folder)."""
_SQLITE_HEADER = b"SQLite format 3\x00"


class CheckpointFileError(ValueError):
    """The checkpoints file cannot be used (a ``ValueError``: bad input, one clear message)."""


POSTGRES_SCHEMES = ("postgresql://", "postgres://")
SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
SQLITE_URI = "sqlite:///"
"""SQLAlchemy's spelling of a SQLite file: ``sqlite:///rel.sqlite``, ``sqlite:////abs.sqlite``."""
_SCHEME = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]+:)+")  # ``jdbc:postgresql:``; ``C:`` is a drive
_KEYWORDS = re.compile(r"^[A-Za-z_]\w*\s*=")  # libpq's ``host=db user=rag password=...``
_USERINFO = re.compile(r"^((?:[A-Za-z][A-Za-z0-9+.-]*:)+(?://)?).*@", re.DOTALL)
"""A URI's scheme(s), then all up to its last ``@``: the user info, also in a URI ``urlsplit``
refuses (an unclosed ``[``) or whose password holds an unescaped ``/`` or ``@``."""
_PAIR = re.compile(r"(^|[?&;\s])([A-Za-z_][\w.-]*)(\s*=\s*)('(?:[^'\\]|\\.)*'?|[^&;\s]*)")
"""A ``name=value`` word: libpq's (``password='a b'``) or a query's (``?password=x``)."""
_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


def is_postgres(checkpoints: str | Path) -> bool:
    """Whether ``checkpoints`` is a PostgreSQL URI rather than a SQLite file.

    A ``Path`` never is: ``Path`` folds ``//`` into ``/``, so a URI must arrive as a string."""
    return isinstance(checkpoints, str) and checkpoints.strip().lower().startswith(POSTGRES_SCHEMES)


def shown(spec: str | Path) -> str:
    """``spec`` as an error may quote it: a URI's user info (``postgresql://***@host``, also when
    the URI is malformed) and every secret-looking ``name=value`` (libpq's ``password=``, a
    query's ``?password=``) masked."""
    text = _USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", str(spec).strip())
    return _PAIR.sub(
        lambda m: "".join(m.group(1, 2, 3)) + (MASK if SECRET_NAME.search(m.group(2)) else m.group(4)),
        text,
    )


def _secrets(spec: str) -> set[str]:
    """The password of a ``scheme://user:password@host`` spec, as written and decoded, to mask
    wherever an error quotes it."""
    found = _USERINFO.match(spec.strip())
    if not found:
        return set()
    password = spec.strip()[found.end(1) : found.end() - 1].partition(":")[2]
    return {p for p in (password, unquote(password)) if len(p) >= 3}


def _refused(spec: str | Path, why: str) -> CheckpointFileError:
    return CheckpointFileError(f"checkpoints {shown(spec)!r} ({SETTING}): {why}")


def postgres_uri(checkpoints: str) -> str:
    """``checkpoints`` (a ``postgresql://`` or ``postgres://`` URI) stripped, checked before any
    connection: its host part parses (an IPv6 address in closed brackets, a port that is a
    number), ``%`` only starts ``%XX`` escapes, and no blank or control character is in it (a
    space in a password is written ``%20``). libpq refused such a URI only when connecting, and
    the error quoted the password.

    Raises:
        CheckpointFileError: in one line, the password masked.
    """
    uri = checkpoints.strip()
    if any(c.isspace() or not c.isprintable() for c in uri):
        raise unreachable(uri, "a blank or control character in the URI; write a space as %20")
    if _PERCENT.search(uri):
        raise unreachable(uri, "a % that does not start a %XX escape; write a % itself as %25")
    try:
        parts = urlsplit(uri)  # an unclosed [ raises here; the message quotes nothing
    except ValueError as exc:
        raise unreachable(uri, f"not a valid URI ({exc})") from None
    if parts.netloc.count("@") > 1 or "@" in uri.partition("://")[2] and "@" not in parts.netloc:
        # libpq would take a piece of the password for the host or port, and quote it
        raise unreachable(
            uri, "write an @, /, ? or # in a user or password as %40, %2F, %3F or %23 (one @ ends them)"
        )
    try:
        parts.port  # noqa: B018 - read for its check (the port is after the user info: no secret)
    except ValueError as exc:
        raise unreachable(uri, f"not a valid URI ({exc})") from None
    return uri


def unreachable(uri: str, why: object) -> CheckpointFileError:
    """The one-line error of a PostgreSQL checkpoints URI that cannot be used (malformed, or the
    database refused it); the password (in the URI or quoted by the driver) is masked, and only
    the driver's first line is kept."""
    first = next((line.strip() for line in str(why).splitlines() if line.strip()), type(why).__name__)
    said = mask(redact(first), _secrets(uri))
    return CheckpointFileError(f"checkpoints database {shown(uri)!r} ({SETTING}) cannot be used: {said}")


def checkpoint_file(checkpoints: str | Path) -> str:
    """The resolved checkpoints path, its folder created; refused when it is not SQLite.

    Raises:
        CheckpointFileError: a value that is neither a SQLite file nor a PostgreSQL URI
            (``sqlite_path``; nothing is created for it), a folder, a missing file whose name
            does not end in ``SQLITE_SUFFIXES``, or an existing non-empty file that is not SQLite.
    """
    path = sqlite_path(checkpoints)
    if path.is_dir():
        raise CheckpointFileError(f"checkpoints file {str(path)!r} ({SETTING}) is a folder; name a file")
    if path.is_file() and path.stat().st_size:
        with open(path, "rb") as handle:
            if handle.read(len(_SQLITE_HEADER)) != _SQLITE_HEADER:
                raise CheckpointFileError(_unusable(path, "not an SQLite file"))
    elif not path.name.lower().endswith(SQLITE_SUFFIXES):
        raise _refused(
            checkpoints,
            f"not a SQLite file: name one ending in {', '.join(SQLITE_SUFFIXES)} (or write "
            f"{SQLITE_URI}<path>), or give a postgresql:// URI",
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    return str(path)


def sqlite_path(checkpoints: str | Path) -> Path:
    """The SQLite file ``checkpoints`` names, resolved, not yet looked at on disk.

    Raises:
        CheckpointFileError: a URI of another kind (``postgresql+psycopg://``,
            ``jdbc:postgresql://``), libpq's ``key=value`` words, or a PostgreSQL URI folded by
            ``Path``; the password masked.
    """
    text = str(checkpoints).strip()
    if isinstance(checkpoints, Path) and text.lower().startswith(("postgresql:", "postgres:")):
        raise CheckpointFileError(  # not quoted: a folded URI has no host part to mask its password by
            f"checkpoints ({SETTING}) look like a PostgreSQL URI folded by Path ('//' became '/'): "
            "pass the URI as a str"
        )
    if text.lower().startswith(SQLITE_URI):
        text = text[len(SQLITE_URI) :]
    elif _KEYWORDS.match(text):
        raise _refused(
            checkpoints,
            "libpq's key=value settings are not read; write postgresql://user:password@host:port/database",
        )
    elif scheme := _SCHEME.match(text):
        raise _refused(
            checkpoints,
            "write it as postgresql://user:password@host:port/database (the driver is psycopg's)"
            if "postgres" in scheme.group().lower()  # postgresql+psycopg:, jdbc:postgresql:
            else "neither a SQLite file nor a postgresql:// or postgres:// URI (write ./ before a "
            "file name that holds a colon)",
        )
    return Path(text).expanduser().resolve()


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
