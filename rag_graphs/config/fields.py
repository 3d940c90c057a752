"""``RagContext``'s field types: bounds, spec checks and the environment defaults.

A type here is the validation of every field that uses it (``RagContext`` is a pydantic
dataclass); the spec checks are ``rag_graphs.config.specs``'s, which build nothing, so settings
stay light and import no store, search or model module.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import field
from typing import Annotated, Any, Literal

from langchain_core.documents import BaseDocumentCompressor
from langchain_core.tools import BaseTool
from pydantic import AfterValidator, BeforeValidator, Field, InstanceOf
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from rag_graphs.catalog import METHODS, ROUTED_KINDS
from rag_graphs.config.specs import (
    check_cache_path,
    check_compress,
    check_expand,
    check_filter,
    check_reranker,
    check_web_search,
)

DEFAULT_STORE_URI = ".rag-graphs/milvus.db"
DEFAULT_COLLECTION = "rag_graphs"

Positive = Annotated[int, Field(ge=1)]
NonNegative = Annotated[int, Field(ge=0)]
Fraction = Annotated[float, Field(ge=0, le=1)]
MAX_SECONDS = 24 * 3600.0
Seconds = Annotated[float, Field(gt=0, le=MAX_SECONDS, allow_inf_nan=False)]
"""A time limit in seconds: finite, above 0, at most a day."""
MAX_WEIGHT = 100.0
Weight = Annotated[float, Field(ge=1, le=MAX_WEIGHT, allow_inf_nan=False)]
"""A relative weight: finite, from 1 (no extra weight) to ``MAX_WEIGHT`` (beyond it one side
decides alone, which a weight of 1e308 or inf used to do silently)."""
MAX_K = 16_384  # Milvus (Lite and server) refuses a larger top-k, after a long wait
TopK = Annotated[int, Field(ge=1, le=MAX_K)]
MAX_LOOP = 50
"""Most hops, steps or iterations one loop may be given: each costs model calls and searches, and
a budget of millions ran until LangGraph's recursion limit stopped it."""
LoopBudget = Annotated[int, Field(ge=1, le=MAX_LOOP)]


def checked_k(value: object, where: str) -> int:
    """``value`` when it is a ``TopK`` (a whole number from 1 to ``MAX_K``), else a one-line
    ``ValueError`` naming ``where``: for a ``k`` given outside ``RagContext`` (``RagRetriever``)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_K:
        raise ValueError(f"{where}={value!r}: expected a whole number from 1 to {MAX_K:,} (Milvus's limit)")
    return value


SearchFilter = Annotated[str, AfterValidator(check_filter)]
RerankerSpec = Annotated[
    str | SkipJsonSchema[InstanceOf[BaseDocumentCompressor]], AfterValidator(check_reranker)
]
ExpandSpec = Annotated[str, AfterValidator(check_expand)]
CachePath = Annotated[str | None, AfterValidator(check_cache_path)]
CompressSpec = Annotated[str, AfterValidator(check_compress)]
WebSearchSpec = Annotated[str | SkipJsonSchema[InstanceOf[BaseTool]] | None, AfterValidator(check_web_search)]


def _names(raw: str) -> tuple[str, ...]:
    """``"a, b"`` -> ``("a", "b")``: list-valued settings in environment variables."""
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def _one_or_many(value: Any) -> Any:
    """A bare string is one value, not a sequence of letters; None is none."""
    return (value,) if isinstance(value, str) else (() if value is None else value)


def _non_blank(value: str) -> str:
    """An access label that names something: an empty or blank one would match nothing, or,
    read from an empty environment variable, restrict nothing."""
    if not value.strip():
        raise PydanticCustomError("blank_label", "an access label must not be empty or blank")
    return value


Label = Annotated[str, Field(min_length=1), AfterValidator(_non_blank)]
Labels = Annotated[tuple[Label, ...], BeforeValidator(_one_or_many)]


InterruptKind = Literal["plan", "web_search", "clarify"]
"""Where a person may step in (``rag_graphs.nodes.interrupts``): approve or edit the plan of
``planned`` and ``decomposition``, confirm a web search of ``crag`` and ``react``, answer
``auto``'s question back when the router is unsure of the question's kind."""


def _kinds(value: Any) -> Any:
    """``"plan,web_search"`` (the environment's form), one name, a list or None -> a set of names."""
    if value is None:
        return frozenset()
    return frozenset(_names(value) if isinstance(value, str) else value)


Interrupts = Annotated[
    frozenset[InterruptKind], BeforeValidator(_kinds, json_schema_input_type=list[InterruptKind] | str)
]


def _parse_routes(value: Any) -> Any:
    """``"single_hop=naive,multi_hop=ircot"`` (the environment's and the CLI's form) -> a dict."""
    if isinstance(value, dict) and not all(isinstance(x, str) for x in (*value, *value.values())):
        raise ValueError(f"RagContext.routes={value!r}: expected question kind -> method name strings")
    if not isinstance(value, str):
        return value
    table = {}
    for part in filter(None, (p.strip() for p in value.split(","))):
        kind, sep, method = part.partition("=")
        if not sep or not method.strip():
            raise ValueError(f"RagContext.routes: {part!r} is not 'kind=method'")
        table[kind.strip()] = method.strip()
    return table


def check_route(kind: str, method: str) -> str:
    """``method`` when it is a method ``routes`` may send questions of ``kind`` to, else ValueError."""
    if kind not in ROUTED_KINDS:
        raise ValueError(f"RagContext.routes: unknown question kind {kind!r}; use {', '.join(ROUTED_KINDS)}")
    if method not in METHODS or method == "auto":
        available = ", ".join(m for m in METHODS if m != "auto")
        raise ValueError(f"RagContext.routes: {kind}={method!r} is not a method; available: {available}")
    return method


def _check_routes(table: dict[str, str]) -> dict[str, str]:
    unknown = sorted(set(table) - set(ROUTED_KINDS))
    if unknown:
        raise ValueError(
            f"RagContext.routes: unknown question kind(s) {unknown}; use {', '.join(ROUTED_KINDS)}"
        )
    for kind, method in table.items():
        check_route(kind, method)
    return table


Routes = Annotated[
    dict[str, str],
    BeforeValidator(_parse_routes, json_schema_input_type=dict[str, str] | str),
    AfterValidator(_check_routes),
]


def _env(
    name: str, default: Any, cast: Callable[[str], Any] | None = None, *, restricts: bool = False
) -> Any:
    """A field whose default is environment variable ``name`` (converted by the field's type).

    An empty variable means "not set", except for an access restriction (``restricts``): there
    ``RAG_GRAPHS_TENANT=`` (often an unset shell variable expanded) or ``RAG_GRAPHS_TAGS=,``
    would silently restrict nothing, so a variable that is set but names nothing is refused.
    """

    def factory() -> Any:
        raw = os.environ.get(name)
        if raw is None or (raw == "" and not restricts):
            return default
        value = cast(raw) if cast else raw
        if restricts and not (value.strip() if isinstance(value, str) else value):
            raise ValueError(
                f"environment variable {name}={raw!r} is set but names no value, so it would restrict "
                f"nothing: give a value, or unset {name} for no restriction"
            )
        return value

    return field(default_factory=factory, metadata={"env": name})
