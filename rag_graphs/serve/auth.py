"""Per-user access on the LangGraph server: who calls, what their runs may read, whose threads
they see. ``langgraph.json`` loads ``auth`` (``"auth": {"path": "./rag_graphs/serve/auth.py:auth"}``).

Authentication: with ``RAG_GRAPHS_USERS=/path/users.json`` each request must carry an API key
(``x-api-key: <key>`` or ``Authorization: Bearer <key>``) that the file maps to a user::

    {"<api key>": {"identity": "alice", "tenant": "acme", "tags": ["hr"], "sources": [],
                   "search_filter": null}}

Without the variable every request is one local user, ``local``, with the deployment's access
(the server's ``RAG_GRAPHS_TENANT``/``TAGS``/``SOURCES``/``SEARCH_FILTER``): ``langgraph dev``
keeps working with no key, as before auth existed, so do not expose such a server beyond loopback.

The user's access fields travel with each of their runs (the server puts the user in
``config["configurable"]["langgraph_auth_user"]``) and ``rag_graphs.config.runtime`` narrows
the deployment's access by them before the client's context may narrow it further: what the
client sends cannot lift them.

Authorization: threads, runs and crons are stamped with ``metadata.owner`` when created and
filtered by it on every read, search, update, delete and run, so one user cannot list, read or
run on another's thread (the server answers 404). The served graphs' assistants are readable by
everyone; an assistant a user creates is theirs alone. Store items live under the user's
namespace.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph_sdk import Auth

from rag_graphs.config.specs import check_filter

USERS = "RAG_GRAPHS_USERS"
"""Environment variable: the JSON file of API keys and the users they name (unset: one local user)."""
LOCAL = "local"
"""The identity of every request when ``RAG_GRAPHS_USERS`` is unset."""
OWNER = "owner"
"""The metadata key holding the identity of whoever created a thread, run, cron or assistant."""
log = logging.getLogger(__name__)
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


def load_users(path: Path) -> dict[str, User]:
    """The users file's API keys and users.

    Raises:
        UsersFileError: the file cannot be read or parsed, or an entry has a missing, unknown or
            badly typed field (named as ``<file>: entry <n> (<identity>).<field>``; never the key).
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
    for n, (key, entry) in enumerate(raw.items(), start=1):
        where = f"{path}: entry {n}"
        if not key.strip():
            raise UsersFileError(f"{where}: the API key is empty")
        users[key] = _user(entry, where)
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


def api_key(headers: Mapping[bytes, bytes]) -> str | None:
    """The request's API key: ``x-api-key``, else an ``Authorization: Bearer`` token."""
    lowered = {k.lower(): v for k, v in headers.items()}
    if key := lowered.get(b"x-api-key"):
        return key.decode("latin-1").strip() or None
    scheme, _, token = lowered.get(b"authorization", b"").decode("latin-1").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


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


def identify(headers: Mapping[bytes, bytes], users_file: str | None) -> User:
    """The user a request comes from (blocking: reads the users file when it changed).

    Raises:
        Auth.exceptions.HTTPException: 401 when a users file is set and the request carries no
            key, or one the file does not hold.
        UsersFileError: the users file is bad.
    """
    if not users_file:
        return User(identity=LOCAL)
    users = _CACHE.get(Path(users_file))
    key = api_key(headers)
    if key is None or key not in users:
        raise Auth.exceptions.HTTPException(
            status_code=401, detail="missing or unknown API key (send x-api-key or Authorization: Bearer)"
        )
    return users[key]


def owned(identity: str, value: Any) -> dict[str, str]:
    """Stamp ``value`` (what the action writes or searches with) with its owner in its metadata;
    the filter that limits the action to ``identity``'s resources."""
    if isinstance(value, dict):
        if isinstance(value.get("metadata"), dict):  # in place: the server holds this very dict
            value["metadata"][OWNER] = identity
        else:
            value["metadata"] = {OWNER: identity}
    return {OWNER: identity}


auth = Auth()


@auth.authenticate
async def authenticate(headers: dict[bytes, bytes]) -> Auth.types.MinimalUserDict:
    """The caller's user, with the access every search of their runs applies."""
    try:
        user = await asyncio.to_thread(identify, headers, os.environ.get(USERS))
    except UsersFileError:
        log.exception("refusing every request until the users file is fixed")
        raise Auth.exceptions.HTTPException(
            status_code=500, detail=f"bad {USERS} file: see the server log"
        ) from None
    return user.as_user()  # type: ignore[return-value]


@auth.on
async def owner_only(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
    """Threads, runs, crons: a user's own only."""
    return owned(ctx.user.identity, value)


@auth.on.assistants
async def shared_assistants(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | None:
    """The served graphs' assistants are everyone's to read and run; a user's own are theirs."""
    if ctx.action in ("read", "search"):
        return None
    return owned(ctx.user.identity, value)


@auth.on.store
async def own_namespace(ctx: Auth.types.AuthContext, value: Any) -> None:
    """Store items live under the user's identity."""
    namespace = tuple(value.get("namespace") or ())
    if namespace[:1] != (ctx.user.identity,):
        value["namespace"] = (ctx.user.identity, *namespace)
