"""One question, one run state: the ``begin`` node every method graph opens with.

A checkpointed thread keeps its state between runs (that is how LangGraph Server,
``langgraph dev`` and a caller's own ``checkpointer`` + ``thread_id`` work), and the
shared state's reducers add: a second question on a thread used to start with the
first one's ``steps``, ``documents``, ``usage``, ``hops`` and ``searches`` (so its
budget was already spent), and with its ``stop_kind``, ``shown`` numbering and
answer. ``begin`` runs first on every new input and puts every field back to the
value it has in a run on a new thread: reducer fields are replaced (LangGraph's
``Overwrite``) with their empty value, plain fields set to the value that reads as
"not set" to the nodes. On a new thread it writes nothing.

A resumed run (input ``None``, ``rag_graphs.run``'s resume) continues after its
last checkpoint and never passes through ``begin`` again, so nothing it gathered is lost.
"""

from __future__ import annotations

import copy
import typing
from collections.abc import Callable
from typing import Any

from langgraph.types import Overwrite
from typing_extensions import is_typeddict

from rag_graphs.state import Unset

BEGIN = "begin"
"""The name of the node that opens every method graph."""

KEPT = frozenset({"question"})
"""Fields a new run keeps: the input, written by the caller before ``begin`` runs."""
MAX_QUESTION_CHARS = 8_000
"""The longest question a run reads. A question is a question, not a document: a 1 MB one took
95 s and 3.3 GB in graph search (entity tagging, n-gram look-ups) before failing in spaCy (attack
round 3). Long text belongs in the corpus (``rag-graphs ingest``)."""


def check_question(question: object) -> str:
    """``question`` when a run can read it, else one ``ValueError`` saying why and what to do.

    Raises:
        ValueError: not a string, blank, or longer than ``MAX_QUESTION_CHARS``.
    """
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"the question is empty or not text ({type(question).__name__}): ask something")
    if len(question) > MAX_QUESTION_CHARS:
        raise ValueError(
            f"the question is {len(question):,} characters; a run reads at most {MAX_QUESTION_CHARS:,} "
            "(rag_graphs.nodes.fresh.MAX_QUESTION_CHARS): ask a shorter question, and ingest long text "
            "into the corpus instead"
        )
    return question


UNSET: dict[str, Any] = {
    # What a node reads for a field of the shared state (``rag_graphs.state.RagState``) no node
    # wrote yet: ``state.get(name, <this>)``. A method's own fields declare theirs on the field
    # (``rag_graphs.state.Unset``); fields named nowhere and not reducers read as None.
    "answer": "",
    "citations": [],
    "stop_reason": "",
    "query": "",
    "latest": [],
    "latest_repeated": False,
    "subqueries": [],
    "shown": [],
    "found_correct": False,
}


def fresh_values(schema: type) -> dict[str, Any]:
    """Field -> the value a new question starts from, for the TypedDict ``schema``: reducer
    fields (``Annotated[T, reducer]``) as ``Overwrite`` of T's empty value, fields marked
    ``Annotated[T, Unset(v)]`` as ``v``, the rest from ``UNSET`` (None when not listed:
    ``evidence``, ``stop_kind``, ``grounded``...)."""
    out: dict[str, Any] = {}
    for name, hint in typing.get_type_hints(schema, include_extras=True).items():
        if name in KEPT:
            continue
        marks = typing.get_args(hint)[1:] if typing.get_origin(hint) is typing.Annotated else ()
        if unset := [m for m in marks if isinstance(m, Unset)]:
            out[name] = copy.deepcopy(unset[0].value)
        elif marks:
            out[name] = Overwrite(_empty(typing.get_args(hint)[0]))
        else:
            out[name] = UNSET.get(name)
    return out


def _empty(kind: Any) -> Any:
    """The empty value of a reducer field's type: ``[]``, ``{}`` or ``0``."""
    origin = typing.get_origin(kind) or kind
    if origin is dict or is_typeddict(origin):  # the state's TypedDicts come from typing_extensions
        return {}
    if origin is int:
        return 0
    return []


def make_begin(schema: type) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The ``begin`` node of a graph over ``schema``: every field the state holds that
    differs from its fresh value is reset (nothing on a new thread)."""
    fresh = fresh_values(schema)

    def begin(state: dict[str, Any]) -> dict[str, Any]:
        """Start the question from a clean run state (a thread's earlier question leaves nothing)."""
        return {
            name: value
            for name, value in fresh.items()
            if name in state and state[name] != (value.value if isinstance(value, Overwrite) else value)
        }

    return begin
