"""The run's ``RagContext``, from LangGraph's runtime: passed as an object by Python callers, sent as
JSON by LangGraph Studio and the server, or read from the environment when a deployment opts in.

On a served graph (``RAG_GRAPHS_SERVED=1``, which ``langgraph.json`` sets) the context comes from a
client, as JSON that LangGraph may already have made into a ``RagContext``, and the deployment, not
the client, decides what a run may read and which services it calls: the deployment's settings are
the environment's (``RagContext()``), and a client may only narrow its access (a tenant where the
deployment sets none, tags and sources within the deployment's, a filter combined with the
deployment's by AND) and may not name another store, collection, model, web search or file. It may
word prompts its own way (``RagContext.prompts``, laid over the deployment's: see
``rag_graphs.config.prompts`` for why that widens nothing).
A widening is refused in one line naming the field (attack round 3: ``{"tenant": null}`` or
``{"tenant": "globex"}`` read another tenant's passages, and a client-set web search endpoint
made the server fetch a URL on its own loopback). Elsewhere a caller passing a context is the
deployment itself and is trusted as is.
"""

from __future__ import annotations

import os
from typing import Any

from rag_graphs.config.context import RagContext
from rag_graphs.config.specs import all_of

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
    "search_cache_path",
    "retriever_timeout",
)
"""Fields a served run takes from its deployment only: the services and files it reaches."""


class ContextRefused(ValueError):
    """A served run's context asks for more than its deployment allows."""


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
        return served_context(ctx)
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


def served_context(context: dict[str, Any] | RagContext | None) -> RagContext:
    """The context a client of a served graph may have: the deployment's (``RagContext()``), with
    what the client may change, and its access only ever narrowed. ``context`` is the client's JSON,
    or the ``RagContext`` LangGraph made of it (whose unsent fields hold the deployment's values).

    Raises:
        ContextRefused: the JSON widens the tenant, tags, sources or filter, or names a service or
            file (``DEPLOYMENT_ONLY``) other than the deployment's.
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
    tenant = _narrowed_tenant(deployment.tenant, asked.tenant, "tenant" in sent)
    tags = _narrowed_labels("tags", deployment.tags, asked.tags)
    sources = _narrowed_labels("sources", deployment.sources, asked.sources)
    search_filter = all_of(deployment.search_filter, asked.search_filter if "search_filter" in sent else None)
    return RagContext(
        **{
            **_as_set(asked),
            "tenant": tenant,
            "tags": tags,
            "sources": sources,
            "search_filter": search_filter,
            "prompts": {**deployment.prompts, **asked.prompts},  # a client's wording, role by role
        }
    )


def _as_set(ctx: RagContext) -> dict[str, Any]:
    from dataclasses import fields

    return {f.name: getattr(ctx, f.name) for f in fields(ctx)}


def _narrowed_tenant(deployment: str | None, asked: str | None, sent: bool) -> str | None:
    if deployment is None:
        return asked
    if sent and asked not in (None, deployment):
        raise ContextRefused(
            f"RagContext.tenant={asked!r}: this deployment serves tenant {deployment!r} only"
        )
    return deployment  # ``null`` from the client does not lift the deployment's tenant


def _narrowed_labels(name: str, deployment: tuple[str, ...], asked: tuple[str, ...]) -> tuple[str, ...]:
    if not deployment:
        return asked
    if not asked or asked == deployment:
        return deployment
    outside = sorted(set(asked) - set(deployment))
    if outside:
        raise ContextRefused(
            f"RagContext.{name}={list(asked)!r}: this deployment allows {list(deployment)!r} only "
            f"({outside} are not)"
        )
    return asked
