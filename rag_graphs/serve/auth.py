"""Per-user access on the LangGraph server: who calls, what their runs may read, whose threads
and assistants they see, and what a client may not do to a thread. ``langgraph.json`` loads
``auth`` (``"auth": {"path": "./rag_graphs/serve/auth.py:auth"}``).

Authentication: with ``RAG_GRAPHS_USERS=/path/users.json`` each request must carry an API key
(``x-api-key: <key>`` or ``Authorization: Bearer <key>``) that the file maps to a user
(``rag_graphs.config.users``: the file's format, and why one identity is one access). Without the
variable every request is one local user, ``local``, with the deployment's access
(``RAG_GRAPHS_TENANT``/``TAGS``/``SOURCES``/``SEARCH_FILTER``): ``langgraph dev`` keeps working
with no key, as before auth existed, so do not expose such a server beyond loopback.

A run reads under the access its user's identity has in the users file when each node runs
(``rag_graphs.config.runtime``), whatever the client sends and whatever the server stored with
the run (a cron's runs carry their creator's identity alone).

Authorization, on every action, for the user the users file names *now*: a user whose key was
removed (revoked) is refused everything, including the runs their crons would start.

- Threads, runs and crons are stamped with their owner (``metadata.owner``, the identity, and
  ``metadata.owner_tenant``, its tenant) when created and filtered by both on every read, search,
  update, delete and run: one user cannot list, read or run on another's thread (the server
  answers 404), nor can one identity moved to another tenant read its old tenant's threads.
- Assistants: the served graphs' own (``created_by: system``) are everyone's; one a user creates
  is theirs alone, to read, search, run and see as an MCP tool (attack round 4: another user
  listed, read and ran it, and its prompt replacement ran over their own documents).
- A thread's state is written by its graph only: state edits (``threads.update_state``) and
  commands other than a resume (``goto``, ``update``) are refused on every thread; the indexing
  graph's runs take no interrupts nor a checkpoint to start from, and no assistant of the
  indexing graph can be made (attack round 4: an edited ``index`` thread deleted another tenant's
  sources). The indexing graph's nodes also check their caller again (``rag_graphs.serve.indexing``).
- Store items live under the user's namespace.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Mapping
from typing import Any

from langgraph_sdk import Auth

from rag_graphs.config.users import (
    LOCAL,
    USERS,
    User,
    UsersFileError,
    current_users,
    load_users,
    user_named,
)

__all__ = ["LOCAL", "USERS", "User", "UsersFileError", "auth", "identify", "load_users", "owned"]

OWNER = "owner"
"""The metadata key holding the identity of whoever created a thread, run, cron or assistant."""
OWNER_TENANT = "owner_tenant"
"""The metadata key holding the tenant of that identity when it created it (``""``: none)."""
SYSTEM = {"created_by": "system"}
"""The metadata the server gives the served graphs' own assistants."""
INDEX_GRAPH = "index"
"""The indexing graph's name in ``langgraph.json``."""
_GRAPH_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
"""The namespace the LangGraph server derives a graph's own assistant id from (``uuid5``)."""
INDEX_ASSISTANT = str(uuid.uuid5(_GRAPH_NAMESPACE, INDEX_GRAPH))
"""The id of the indexing graph's own assistant, the one assistant its runs may come through."""
log = logging.getLogger(__name__)


def api_key(headers: Mapping[bytes, bytes]) -> str | None:
    """The request's API key: ``x-api-key``, else an ``Authorization: Bearer`` token."""
    lowered = {k.lower(): v for k, v in headers.items()}
    if key := lowered.get(b"x-api-key"):
        return key.decode("latin-1").strip() or None
    scheme, _, token = lowered.get(b"authorization", b"").decode("latin-1").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def identify(headers: Mapping[bytes, bytes], users_file: str | None) -> User:
    """The user a request comes from (blocking: reads the users file when it changed).

    Raises:
        Auth.exceptions.HTTPException: 401 when a users file is set and the request carries no
            key, or one the file does not hold.
        UsersFileError: the users file is bad.
    """
    if not users_file:
        return User(identity=LOCAL)
    users = current_users(users_file)
    key = api_key(headers)
    if key is None or key not in users:
        raise Auth.exceptions.HTTPException(
            status_code=401, detail="missing or unknown API key (send x-api-key or Authorization: Bearer)"
        )
    return users[key]


def owner_filter(user: User) -> dict[str, str]:
    """The metadata that marks ``user``'s own threads, runs, crons and assistants."""
    return {OWNER: user.identity, OWNER_TENANT: user.tenant or ""}


def owned(user: User, value: Any) -> dict[str, str]:
    """Stamp ``value`` (what the action writes or searches with) with its owner in its metadata;
    the filter that limits the action to ``user``'s resources."""
    stamp = owner_filter(user)
    if isinstance(value, dict):
        if isinstance(value.get("metadata"), dict):  # in place: the server holds this very dict
            value["metadata"].update(stamp)
        else:
            value["metadata"] = dict(stamp)
    return stamp


def refused(detail: str) -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(status_code=403, detail=detail)


def _bad_users_file() -> Auth.exceptions.HTTPException:
    log.exception("refusing every request until the users file is fixed")
    return Auth.exceptions.HTTPException(status_code=500, detail=f"bad {USERS} file: see the server log")


async def current_user(ctx: Auth.types.AuthContext) -> User:
    """The user the users file names ``ctx``'s identity now (the server may hand a handler a user it
    stored long ago: a cron's runs are authorised as their creator, by identity alone).

    Raises:
        Auth.exceptions.HTTPException: 403 when no key of the users file names the identity now
            (its key was revoked); 500 when the users file is bad.
    """
    identity = str(getattr(ctx.user, "identity", "") or "")
    try:
        user = await asyncio.to_thread(user_named, identity)
    except UsersFileError:
        raise _bad_users_file() from None
    if user is None:
        raise refused(f"user {identity!r} holds no key of this deployment (revoked)")
    return user


auth = Auth()


@auth.authenticate
async def authenticate(headers: dict[bytes, bytes]) -> Auth.types.MinimalUserDict:
    """The caller's user, with the access every search of their runs applies."""
    try:
        user = await asyncio.to_thread(identify, headers, os.environ.get(USERS))
    except UsersFileError:
        raise _bad_users_file() from None
    return user.as_user()  # type: ignore[return-value]


@auth.on
async def owner_only(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
    """Threads, runs, crons: a user's own only; a thread's state written by its graph only."""
    user = await current_user(ctx)
    if ctx.resource == "threads" and ctx.action == "update" and isinstance(value, dict):
        if "metadata" not in value:  # the server's state update: ``threads.update_state``, bulk too
            raise refused("a thread's state is written by its graph only (no state edits)")
    if ctx.resource == "threads" and ctx.action == "create_run" and isinstance(value, dict):
        check_run(value)
    return owned(user, value)


def check_run(value: Mapping[str, Any]) -> None:
    """Refuse a run that would steer a graph past its own nodes: a command other than a resume
    (``goto``, ``update``) on any graph; on the indexing graph, interrupts and a checkpoint to
    start from (a stop between its check and its writes is a chance to edit what was checked).

    Raises:
        Auth.exceptions.HTTPException: 403 naming what was refused.
    """
    kwargs = value.get("kwargs") or {}
    command = kwargs.get("command") or {}
    steering = sorted(k for k in ("goto", "update") if command.get(k) not in (None, [], {}))
    if steering:
        raise refused(f"Command({', '.join(steering)}=...): a run may only resume its graph, not steer it")
    if str(value.get("assistant_id")) != INDEX_ASSISTANT:
        return
    configurable = (kwargs.get("config") or {}).get("configurable") or {}
    for name in ("interrupt_before", "interrupt_after"):
        if kwargs.get(name):
            raise refused(f"{name}: the indexing graph runs from its check to its writes without a stop")
    if configurable.get("checkpoint_id") or configurable.get("checkpoint_map"):
        raise refused("checkpoint: the indexing graph's runs start from their request, not a checkpoint")


@auth.on.assistants
async def own_assistants(ctx: Auth.types.AuthContext, value: Any) -> dict[str, Any]:
    """The served graphs' assistants are everyone's to read and run; a user's own are theirs alone.
    (The server takes ``$or`` of filter groups, in memory and on Postgres; the SDK's
    ``FilterType`` does not name it.)"""
    user = await current_user(ctx)
    if ctx.action in ("read", "search"):
        return {"$or": [owner_filter(user), dict(SYSTEM)]}
    if isinstance(value, dict) and value.get("graph_id") == INDEX_GRAPH:
        raise refused("the indexing graph takes no assistants but its own (it has nothing to configure)")
    return owned(user, value)


@auth.on.store
async def own_namespace(ctx: Auth.types.AuthContext, value: Any) -> None:
    """Store items live under the user's identity."""
    namespace = tuple(value.get("namespace") or ())
    if namespace[:1] != (ctx.user.identity,):
        value["namespace"] = (ctx.user.identity, *namespace)
