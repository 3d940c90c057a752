"""How a run that cannot go on ends, and which node failures it retries.

Every method's nodes share one LangGraph ``RetryPolicy`` (``RETRY``) that retries *transient*
errors only (``rag_graphs.llm.faults.is_transient``: timeouts, dropped connections, rate limits,
server errors), with exponential backoff and jitter, a bounded number of times; a request the
server rejected as invalid is never retried. Anything else (a bad API key, a missing model, a
bug), or a transient error that outlasts its attempts, ends the run with ``RunFailed``: its
message names the node and the cause, and its ``result`` is the answer contract as far as the run
got (the reasoning chain up to the failure included). Every node is wrapped by ``guard`` (see
``rag_graphs.nodes.builder.new_builder``), which is how the error knows the chain: it is the
failing node's own input state. These live beside the nodes that raise them; the model-call
classification they use is ``rag_graphs.llm.faults``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from langgraph.errors import GraphBubbleUp
from langgraph.runtime import get_runtime
from langgraph.types import RetryPolicy

from rag_graphs.llm.faults import is_transient, rejected_as_invalid, status_code
from rag_graphs.state import RagState, add_usage, merge_documents


def retryable(exc: BaseException) -> bool:
    """``is_transient``, and a node's ``RunFailed`` (a graph run inside the node, as ``auto``'s)
    when its cause was transient."""
    if isinstance(exc, RunFailed):
        return exc.transient
    return is_transient(exc)


RETRY = RetryPolicy(
    initial_interval=1.0,
    backoff_factor=2.0,
    max_interval=30.0,
    max_attempts=4,
    jitter=True,
    retry_on=retryable,
)
"""The default policy: 4 attempts, waiting ~1 s, 2 s, 4 s (with jitter) between them."""


class RunFailed(RuntimeError):
    """A graph run ended at a node that failed for good.

    ``result`` is the answer contract as far as the run got: ``answer`` (empty
    unless one was written), ``citations``, ``documents``, ``steps`` (the
    reasoning chain up to the failure, ending with an ``error`` step), ``usage``
    and ``error`` (this message). The original exception is ``__cause__``. With a
    checkpointer, invoking the same ``thread_id`` again (input ``None``) re-runs
    the failed node and continues: nothing before it runs twice.
    """

    def __init__(self, message: str, result: dict, *, transient: bool = False) -> None:
        super().__init__(message)
        self.result = result
        self.transient = transient


def _attempt() -> int:
    """Which attempt of the current node this is (LangGraph counts from 1)."""
    try:
        return int(get_runtime().execution_info.node_attempt)  # type: ignore[union-attr]  # None: caught
    except (RuntimeError, AttributeError, TypeError):  # outside a run, or no execution info
        return 1


def describe(error: BaseException, node: str, attempt: int) -> str:
    """One line for the user: where, what, and whether it was retried."""
    from rag_graphs.support.redaction import redact  # an SDK error can quote a URL or header with a key

    cause = redact(f"{type(error).__name__}: {error}").strip().rstrip(":")
    if is_transient(error):
        return f"{node} failed after {attempt} attempts (transient error, retried): {cause}"
    if rejected_as_invalid(error) and (status_code(error) or 0) >= 500:  # a 500 that is not transient
        return f"{node} failed (not retried: the server rejected the request as invalid): {cause}"
    return f"{node} failed (not retried: the error is not transient): {cause}"


def recursion_failure(error: Exception, values: dict) -> RunFailed:
    """``RunFailed`` for LangGraph's ``GraphRecursionError``: a run that took more supersteps than
    its ``recursion_limit`` (a caller's lower limit, or a loop no budget stopped). ``values`` is
    the last state the run reached; its chain ends with an ``error`` step."""
    text = (
        f"the run stopped after LangGraph's recursion limit ({error}); lower max_hops/max_steps/"
        "iterdrag_iterations/fixed_hops or raise the config's recursion_limit"
    )
    state: RagState = values  # type: ignore[assignment]  # the graph's state, as last streamed
    result = {
        "answer": state.get("answer", ""),
        "citations": state.get("citations", []),
        "documents": state.get("documents", []),
        "steps": [*state.get("steps", []), {"node": "run", "kind": "error", "text": text}],
        "usage": state.get("usage", {}),
        "error": text,
    }
    return RunFailed(text, result)


def _failure(node: str, error: Exception, state: RagState) -> RunFailed:
    """``RunFailed`` for ``error`` raised by ``node`` on input ``state``."""
    if isinstance(error, RunFailed):  # a graph run inside this node (auto) failed: keep its chain
        text, tail, transient = str(error), error.result, False
    else:
        text, transient = describe(error, node, _attempt()), is_transient(error)
        tail = {"steps": [{"node": node, "kind": "error", "text": text}]}
    result = {
        "answer": state.get("answer", ""),
        "citations": state.get("citations", []),
        "documents": merge_documents(state.get("documents"), tail.get("documents")),
        "steps": [*state.get("steps", []), *tail["steps"]],
        "usage": add_usage(state.get("usage"), tail.get("usage")),
        "error": text,
    }
    return RunFailed(text, result, transient=transient)


def guard(node: str, action: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a node function (sync or async) so any failure leaves it as ``RunFailed``
    with the chain so far.

    The node's own input state holds every step completed before it, so the
    error can carry the partial reasoning chain without any global bookkeeping.
    LangGraph control flow (interrupts, ``Command`` to a parent) passes through.
    An async node gets an async wrapper, so its coroutine is awaited inside the guard.
    """
    if inspect.iscoroutinefunction(action):

        @functools.wraps(action)
        async def aguarded(state: RagState, *args: Any, **kwargs: Any) -> Any:
            try:
                return await action(state, *args, **kwargs)
            except GraphBubbleUp:
                raise
            except Exception as error:
                raise _failure(node, error, state) from error

        return aguarded

    @functools.wraps(action)
    def guarded(state: RagState, *args: Any, **kwargs: Any) -> Any:
        try:
            return action(state, *args, **kwargs)
        except GraphBubbleUp:
            raise
        except Exception as error:
            raise _failure(node, error, state) from error

    return guarded
