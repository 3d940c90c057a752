"""The users file of a served deployment: API keys, the users they name, the access each carries.

``RAG_GRAPHS_USERS=/path/users.json`` maps each API key to a user::

    {"<api key>": {"identity": "alice", "tenant": "acme", "tags": ["hr"], "sources": [],
                   "search_filter": null}}

The LangGraph auth handler (``rag_graphs.serve.auth``) names a request's user by its key; a run
then reads under the access the file gives that user's identity *now*
(``rag_graphs.config.runtime``), never under fields the server kept with the run: a cron's runs
carry their creator's identity alone, and a key removed from the file (revoked) must stop its
crons, not keep their access. So an identity is one access: two keys naming one identity with
two different access entries are refused when the file is read (attack round 4: two keys of
``alice``, one per tenant, shared their threads, and the file loaded without a word).

The file is read again when its modification time changes: adding or revoking a user needs no
restart. Without the variable every request is one local user, ``local``, with the deployment's
access.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_graphs.config.specs import check_filter

USERS = "RAG_GRAPHS_USERS"
"""Environment variable: the JSON file of API keys and the users they name (unset: one local user)."""
LOCAL = "local"
"""The identity of every request when ``RAG_GRAPHS_USERS`` is unset."""
ENTRY_FIELDS = ("identity", "tenant", "tags", "sources", "search_filter")


class UsersFileError(ValueError):
    """The users file is missing, not JSON, or an entry has a bad field."""


@dataclass(frozen=True)
class User:
    """One caller: who they are, and the access (``RagContext`` fields) all their runs get."""

    identity: str
    tenant: str | None = None
    tags: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    search_filter: str | None = None

    def as_user(self) -> dict[str, Any]:
        """The dict the authenticate handler returns (LangGraph's ``MinimalUserDict`` and more)."""
        return {
            "identity": self.identity,
            "permissions": [],
            "tenant": self.tenant,
            "tags": list(self.tags),
            "sources": list(self.sources),
            "search_filter": self.search_filter,
        }

    def access(self) -> tuple[Any, ...]:
        """What the user may read, in one comparable value (label order does not matter)."""
        return (self.tenant, tuple(sorted(self.tags)), tuple(sorted(self.sources)), self.search_filter)


def load_users(path: Path) -> dict[str, User]:
    """The users file's API keys and users.

    Raises:
        UsersFileError: the file cannot be read or parsed, an entry has a missing, unknown or
            badly typed field (named as ``<file>: entry <n> (<identity>).<field>``; never the
            key), or two entries name one identity with different access.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UsersFileError(f"{USERS}={path}: cannot read it ({error.strerror or error})") from None
    except ValueError as error:
        raise UsersFileError(f"{USERS}={path}: not JSON ({error})") from None
    if not isinstance(raw, dict):
        raise UsersFileError(f"{USERS}={path}: must be a JSON object mapping API keys to users")
    users: dict[str, User] = {}
    first: dict[str, tuple[int, User]] = {}
    for n, (key, entry) in enumerate(raw.items(), start=1):
        where = f"{path}: entry {n}"
        if not key.strip():
            raise UsersFileError(f"{where}: the API key is empty")
        user = users[key] = _user(entry, where)
        seen, earlier = first.setdefault(user.identity, (n, user))
        if earlier.access() != user.access():
            raise UsersFileError(
                f"{where} ({user.identity}): entry {seen} names identity {user.identity!r} with other "
                f"access (tenant, tags, sources, search_filter): one identity is one access; give "
                "each access its own identity"
            )
    return users


def _user(entry: Any, where: str) -> User:
    if not isinstance(entry, dict):
        raise UsersFileError(f"{where}: must be an object with {list(ENTRY_FIELDS)}")
    identity = entry.get("identity")
    if not isinstance(identity, str) or not identity.strip():
        raise UsersFileError(f"{where}.identity: must be a non-empty string")
    where = f"{where} ({identity})"
    unknown = sorted(set(entry) - set(ENTRY_FIELDS))
    if unknown:
        raise UsersFileError(f"{where}.{unknown[0]}: unknown field (known: {list(ENTRY_FIELDS)})")
    tenant = entry.get("tenant")
    if tenant is not None and (not isinstance(tenant, str) or not tenant.strip()):
        raise UsersFileError(f"{where}.tenant: must be a non-empty string or null")
    search_filter = entry.get("search_filter")
    if search_filter is not None:
        if not isinstance(search_filter, str) or not search_filter.strip():
            raise UsersFileError(f"{where}.search_filter: must be a non-empty string or null")
        try:
            check_filter(search_filter)
        except ValueError as error:
            raise UsersFileError(f"{where}.search_filter: {error}") from None
    return User(
        identity=identity,
        tenant=tenant,
        tags=_labels(entry, "tags", where),
        sources=_labels(entry, "sources", where),
        search_filter=search_filter,
    )


def _labels(entry: Mapping[str, Any], name: str, where: str) -> tuple[str, ...]:
    value = entry.get(name) or []
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise UsersFileError(f"{where}.{name}: must be a list of non-empty strings")
    return tuple(value)


class _UsersCache:
    """The users file, read again when its modification time changes (no restart to add a user)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: tuple[Path, int] | None = None
        self._users: dict[str, User] = {}

    def get(self, path: Path) -> dict[str, User]:
        try:
            stamp = (path, path.stat().st_mtime_ns)
        except OSError as error:
            raise UsersFileError(f"{USERS}={path}: cannot read it ({error.strerror or error})") from None
        with self._lock:
            if stamp != self._seen:
                self._users, self._seen = load_users(path), stamp
            return self._users


_CACHE = _UsersCache()


def users_file() -> str | None:
    """The users file the deployment names (``RAG_GRAPHS_USERS``), or None."""
    return os.environ.get(USERS) or None


def current_users(path: str) -> dict[str, User]:
    """The users file's keys and users as the file holds them now (blocking: reads it when changed).

    Raises:
        UsersFileError: the file is bad.
    """
    return _CACHE.get(Path(path))


def user_named(identity: str) -> User | None:
    """The user ``identity`` is now: the users file's entry (the one access of that identity), or
    ``User(LOCAL)`` without a users file; None when no key names it (revoked, or never a user).

    Raises:
        UsersFileError: the users file is bad.
    """
    path = users_file()
    if path is None:
        return User(LOCAL) if identity == LOCAL else None
    return next((u for u in current_users(path).values() if u.identity == identity), None)
