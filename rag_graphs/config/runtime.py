"""The run's ``RagContext``, from LangGraph's runtime: passed as an object by Python callers, sent as
JSON by LangGraph Studio and the server, or read from the environment when a deployment opts in.

On a served graph (``RAG_GRAPHS_SERVED=1``, which ``langgraph.json`` sets) the context comes from a
client, as JSON that LangGraph may already have made into a ``RagContext``, and the deployment, not
the client, decides what a run may read and which services it calls: the deployment's settings are
the environment's (``RagContext()``), and a client may only narrow its access (a tenant where the
deployment sets none, tags and sources within the deployment's, a filter combined with the
deployment's by AND) and may not name another store, collection, model, web search or file. It may
word prompts its own way (``RagContext.prompts``, laid over the deployment's: see
``rag_graphs.config.prompts`` for why that widens nothing), and set what a run costs (``k``,
``num_queries``, loop and token budgets) up to the deployment's caps (``rag_graphs.config.caps``).
A widening is refused in one line naming the field (attack round 3: ``{"tenant": null}`` or
``{"tenant": "globex"}`` read another tenant's passages, and a client-set web search endpoint
made the server fetch a URL on its own loopback). Elsewhere a caller passing a context is the
deployment itself and is trusted as is.

With an auth handler (``rag_graphs.serve.auth``) the server names the caller of each run
(``config["configurable"]["langgraph_auth_user"]``, which LangGraph also gives a node as
``runtime.server_info.user``); the access that user's identity has in the users file when the
node runs (``tenant``, ``tags``, ``sources``, ``search_filter``: ``rag_graphs.config.users``)
narrows the deployment's before the client's context narrows it further (``caller_access``): a
client can only ever narrow what its user may read, and a revoked user's runs stop.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from rag_graphs.config.caps import over_cap
from rag_graphs.config.context import RagContext
from rag_graphs.config.specs import all_of
from rag_graphs.config.users import USERS, user_named, users_file

SERVED = "RAG_GRAPHS_SERVED"
"""Environment variable: ``1`` marks a served deployment (``langgraph.json`` sets it): every run's
context is then narrowed to the deployment's (``served_context``)."""
ENV_DEFAULTS = "RAG_GRAPHS_ENV_DEFAULTS"
"""Environment variable: ``1`` lets a graph run without a context take every setting from the
environment (``RagContext()``); unset, such a run is refused. ``langgraph.json`` sets it for the
graphs ``langgraph dev`` and LangGraph Server run, since Studio may send no context."""

DEPLOYMENT_ONLY = (
    "store_uri",
    "collection",
    "chat_model",
    "embeddings",
    "web_search",
    "demonstrations",
    "router_examples",
    "router_file",
    "search_cache_path",
    "search_cache",
    "retriever_timeout",
)
"""Fields a served run takes from its deployment only: the services and files it reaches, and the
process's search cache (``search_cache`` sizes the one cache every client's runs share)."""


ACCESS_FIELDS = ("tenant", "tags", "sources", "search_filter")
"""The ``RagContext`` fields that bound what a run may read; an authenticated user carries them."""
AUTH_USER = "langgraph_auth_user"
"""The key of ``config["configurable"]`` where the LangGraph server puts a run's authenticated user."""


class ContextRefused(ValueError):
    """A served run's context asks for more than its deployment allows."""


@dataclass(frozen=True)
class Access:
    """What a caller's runs may read: the deployment's access narrowed by the caller's user's.

    Attributes:
        identity: the authenticated user (None: no auth handler named one, e.g. a local run).
        tenant: the one tenant its searches see (None: no tenant restriction).
        tags: its searches see chunks carrying one of these (empty: no tag restriction).
        sources: its searches see these sources only (empty: every source).
        search_filter: a Milvus expression ANDed to every search (None: none).
    """

    identity: str | None = None
    tenant: str | None = None
    tags: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    search_filter: str | None = None


def _on(variable: str) -> bool:
    return os.environ.get(variable, "").strip().lower() in {"1", "true", "yes", "on"}


def env_defaults_allowed() -> bool:
    """True when ``RAG_GRAPHS_ENV_DEFAULTS`` opts in to environment defaults for context-less runs."""
    return _on(ENV_DEFAULTS)


def served() -> bool:
    """True on a served deployment (``RAG_GRAPHS_SERVED``)."""
    return _on(SERVED)


def get_context(runtime: Any) -> RagContext:
    """The run's ``RagContext`` (JSON, as the server sends it, is narrowed to the deployment's).

    Raises:
        TypeError: the run has no context and ``RAG_GRAPHS_ENV_DEFAULTS`` does not opt in to
            environment defaults (a forgotten ``context=`` used to run on whatever store and
            models the environment named); or its context is another object (a method graph
            used as a node of an app graph whose ``context_schema`` is not ``RagContext``).
        ContextRefused: a served run's context widens its access or names a service.
    """
    ctx = getattr(runtime, "context", None)
    if served() and (ctx is None or isinstance(ctx, dict | RagContext)):
        return served_context(ctx, caller_user(runtime))
    if isinstance(ctx, RagContext):
        return ctx
    if isinstance(ctx, dict):  # LangGraph Studio / the server pass context as JSON
        return RagContext(**ctx)
    if ctx is not None:
        raise TypeError(
            f"the run's context is a {type(ctx).__name__}, not a RagContext: pass "
            "context=RagContext(...) (an app graph that runs a method graph as a node: invoke it "
            f"in the node with its own context=RagContext(...)), or no context with {ENV_DEFAULTS}=1 "
            "for environment defaults"
        )
    if not env_defaults_allowed():
        raise TypeError(
            "graph run without a context: pass context=RagContext(...) to invoke/stream "
            f"(RagContext() reads the environment), or set {ENV_DEFAULTS}=1 to run context-less "
            "graphs on environment defaults (langgraph.json sets it for langgraph dev)"
        )
    return RagContext()


def caller_user(source: Any) -> dict[str, Any] | None:
    """The authenticated user of a served run, as a dict (``identity`` and the access it carries),
    from its ``Runtime`` (``server_info.user``) or its ``RunnableConfig``
    (``configurable.langgraph_auth_user``); None without one (no auth handler, or not served).

    With a users file (``RAG_GRAPHS_USERS``) the access is the file's for that identity now, not
    what the server stored with the run: a cron's runs carry their creator's identity alone (which
    read under the deployment's wider access), and a revoked key's crons went on running.

    Raises:
        ContextRefused: no key of the users file names the identity now (revoked).
        UsersFileError: the users file is bad.
    """
    if isinstance(source, Mapping):
        user = (source.get("configurable") or {}).get(AUTH_USER)
    else:
        user = getattr(getattr(source, "server_info", None), "user", None)
    if user is None:
        return None
    if isinstance(user, Mapping):
        given = dict(user)
    elif callable(as_dict := getattr(user, "dict", None)):  # the server's ProxyUser over the handler's dict
        given = dict(as_dict())
    else:
        given = {"identity": getattr(user, "identity", None)}
    if users_file() is None:
        return given
    now = user_named(str(given.get("identity") or ""))
    if now is None:
        raise ContextRefused(
            f"user {given.get('identity')!r} holds no key in {USERS} now (revoked): the run stops"
        )
    return now.as_user()


def caller_access(source: Any = None) -> Access:
    """What the caller of a run may read: the deployment's access (the environment's
    ``RagContext()``), narrowed by the access its authenticated user carries. ``source`` is the
    run's ``RunnableConfig`` or ``Runtime`` (None: no caller, the deployment's access).

    Raises:
        ContextRefused: the user's access is wider than the deployment's (a users file giving a
            user another tenant, or tags outside the deployment's).
    """
    user = caller_user(source) if source is not None else None
    ctx = _bounded(RagContext(), user)
    identity = user.get("identity") if user else None
    return Access(
        identity=str(identity) if identity else None,
        **{name: getattr(ctx, name) for name in ACCESS_FIELDS},
    )


def served_context(
    context: dict[str, Any] | RagContext | None, user: Mapping[str, Any] | None = None
) -> RagContext:
    """The context a client of a served graph may have: the deployment's (``RagContext()``), with
    what the client may change, and its access only ever narrowed: first by its authenticated
    ``user``'s access (``caller_user``), then by the client. ``context`` is the client's JSON,
    or the ``RagContext`` LangGraph made of it (whose unsent fields hold the deployment's values).

    Raises:
        ContextRefused: the JSON widens the tenant, tags, sources or filter, or names a service or
            file (``DEPLOYMENT_ONLY``) other than the deployment's, or sets a cost knob above the
            deployment's cap (``rag_graphs.config.caps``); or the user's access is wider than the
            deployment's.
    """
    deployment = RagContext()
    if isinstance(context, RagContext):  # what differs from the deployment is what the client sent
        sent = {k: v for k, v in _as_set(context).items() if v != getattr(deployment, k)}
    else:
        sent = dict(context or {})
    asked = RagContext(**{**_as_set(deployment), **sent})  # checked like any context
    for name in DEPLOYMENT_ONLY:
        if name in sent and getattr(asked, name) != getattr(deployment, name):
            raise ContextRefused(
                f"RagContext.{name}: a served run uses its deployment's value; a client may not set it "
                "(set it in the server's environment)"
            )
    narrowed = _narrowed(_bounded(deployment, user), sent, "this deployment" if not user else _whose(user))
    if why := over_cap(narrowed, deployment):  # what a run costs: the deployment's caps
        raise ContextRefused(why)
    return narrowed


def _whose(user: Mapping[str, Any]) -> str:
    return f"user {user.get('identity')!r}"


def _bounded(deployment: RagContext, user: Mapping[str, Any] | None) -> RagContext:
    """The deployment's context narrowed by ``user``'s access (its ``ACCESS_FIELDS``)."""
    if not user:
        return deployment
    carried = {
        k: _labels(user[k]) if k in ("tags", "sources") else user[k] for k in ACCESS_FIELDS if k in user
    }
    try:
        return _narrowed(deployment, carried, "this deployment")
    except ContextRefused as error:
        raise ContextRefused(f"{_whose(user)}'s access: {error}") from None


def _labels(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _narrowed(bound: RagContext, sent: Mapping[str, Any], whose: str) -> RagContext:
    """``bound`` with ``sent`` applied, its access only narrowed (refused naming the field else)."""
    asked = RagContext(**{**_as_set(bound), **sent})  # checked like any context
    return RagContext(
        **{
            **_as_set(asked),
            "tenant": _narrowed_tenant(bound.tenant, asked.tenant, "tenant" in sent, whose),
            "tags": _narrowed_labels("tags", bound.tags, asked.tags, whose),
            "sources": _narrowed_labels("sources", bound.sources, asked.sources, whose),
            "search_filter": all_of(
                bound.search_filter, asked.search_filter if "search_filter" in sent else None
            ),
            "prompts": {**bound.prompts, **asked.prompts},  # a client's wording, role by role
        }
    )


def _as_set(ctx: RagContext) -> dict[str, Any]:
    return {f.name: getattr(ctx, f.name) for f in fields(ctx)}


def _narrowed_tenant(bound: str | None, asked: str | None, sent: bool, whose: str) -> str | None:
    if bound is None:
        return asked
    if sent and asked not in (None, bound):
        raise ContextRefused(f"RagContext.tenant={asked!r}: {whose} reads tenant {bound!r} only")
    return bound  # ``null`` from the client does not lift the bound's tenant


def _narrowed_labels(
    name: str, bound: tuple[str, ...], asked: tuple[str, ...], whose: str
) -> tuple[str, ...]:
    if not bound:
        return asked
    if not asked or asked == bound:
        return bound
    outside = sorted(set(asked) - set(bound))
    if outside:
        raise ContextRefused(
            f"RagContext.{name}={list(asked)!r}: {whose} reads {list(bound)!r} only ({outside} are not)"
        )
    return asked
