"""A served deployment's caps on the cost knobs its clients may set.

A served client's context may change how a run searches and answers (``rag_graphs.config.runtime``
narrows its access and keeps the services the deployment's), and many of those settings are what a
run costs: ``num_queries=2000`` was 2,000 searches and 2,001 model calls in one run (attack round
4). Each such field has a cap here: a client may set it up to the cap, or up to the deployment's own
value when that is higher (a client may always ask for what the deployment does by itself), never
above; a refusal names the field, the value and the cap. Runs the deployment starts itself (the
environment's values) and Python callers are not capped: only a served client's context is.

The deployment sets its caps as one JSON object in ``RAG_GRAPHS_CAPS`` (the caps left out keep
their defaults, ``DEFAULT_CAPS``; ``null`` lifts one to the field's own limit)::

    RAG_GRAPHS_CAPS='{"num_queries": 4, "k": 20, "graph_search.neighbourhood": 500}'

One variable, not ``RAG_GRAPHS_MAX_<FIELD>``: several fields' own variables already read
``RAG_GRAPHS_MAX_HOPS``, ``RAG_GRAPHS_MAX_STEPS`` and so on (the deployment's values, not caps).
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any

CAPS = "RAG_GRAPHS_CAPS"
"""Environment variable: a JSON object of caps, field name -> the most a served client may set."""

DEFAULT_CAPS: dict[str, int] = {
    "k": 64,
    "fetch_k": 200,
    "num_queries": 8,
    "max_hops": 10,
    "fixed_hops": 10,
    "max_steps": 16,
    "iterdrag_iterations": 10,
    "max_concurrency": 8,
    "max_answer_tokens": 2048,
    "num_demos": 8,
    "graphrag_context_tokens": 8000,
    "expand_max_tokens": 4096,
    "graph_search.neighbourhood": 1000,
    "graph_search.seeds": 50,
}
"""The caps of a deployment that sets none: about four times each field's default, which leaves
a client room to tune a run while a run costs at most a small multiple of a default one. Every
field here raises what a run spends on models, searches or store reads as it grows: searches
(``k``, ``fetch_k``, ``num_queries``), loop rounds (``max_hops``, ``fixed_hops``, ``max_steps``,
``iterdrag_iterations``), model calls at once (``max_concurrency``), tokens written or read
(``max_answer_tokens``, ``num_demos``, ``graphrag_context_tokens``, ``expand_max_tokens``), and
graph search's store reads (``graph_search.neighbourhood``, ``graph_search.seeds``)."""


class CapsError(ValueError):
    """``RAG_GRAPHS_CAPS`` is not a JSON object of known fields and whole numbers."""


def caps() -> dict[str, int | None]:
    """The deployment's caps: ``DEFAULT_CAPS`` overlaid with ``RAG_GRAPHS_CAPS`` (None: uncapped).

    Raises:
        CapsError: the variable is not JSON, not an object, names a field without a cap, or gives
            a cap that is not a whole number of at least 1 (or null).
    """
    return dict(_parsed(os.environ.get(CAPS, "").strip()))


@lru_cache(maxsize=8)
def _parsed(raw: str) -> tuple[tuple[str, int | None], ...]:
    if not raw:
        return tuple(DEFAULT_CAPS.items())
    try:
        given = json.loads(raw)
    except ValueError as error:
        raise CapsError(f"{CAPS}: not JSON ({error})") from None
    if not isinstance(given, dict):
        raise CapsError(f'{CAPS}: must be a JSON object of field -> cap, e.g. {{"num_queries": 4}}')
    for name, cap in given.items():
        if name not in DEFAULT_CAPS:
            raise CapsError(f"{CAPS}: {name!r} has no cap; the capped fields are {sorted(DEFAULT_CAPS)}")
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise CapsError(f"{CAPS}: {name}={cap!r}: a cap is a whole number of at least 1, or null")
    return tuple({**DEFAULT_CAPS, **given}.items())


def value_of(ctx: Any, name: str) -> Any:
    """``ctx``'s value of a capped field (``graph_search.seeds``: an option of ``graph_search``)."""
    for part in name.split("."):
        ctx = getattr(ctx, part)
    return ctx


def over_cap(asked: Any, deployment: Any) -> str | None:
    """Why ``asked`` (a served client's ``RagContext``) costs more than the deployment allows, in
    one line naming the field, its value and the cap; None when every capped field is within
    its cap or the deployment's own value (``deployment``, the environment's ``RagContext``).

    Raises:
        CapsError: ``RAG_GRAPHS_CAPS`` is malformed.
    """
    for name, cap in caps().items():
        if cap is None:
            continue
        value, own = value_of(asked, name), value_of(deployment, name)
        if value > max(cap, own):
            allowed = f"{cap} (its cap in {CAPS})" if cap >= own else f"{own} (its own setting)"
            return f"RagContext.{name}={value!r}: this deployment allows at most {allowed}; ask for less"
    return None
