"""Faults: which errors a run retries, and how a run that cannot go on ends.

Every method's nodes share one LangGraph ``RetryPolicy`` that retries
*transient* errors only: timeouts, dropped connections, rate limits (HTTP 429)
and server errors (5xx), with exponential backoff and jitter, a bounded number
of times. A request the server rejected as invalid is never retried: the same
request fails the same way (``rejected_as_invalid``: a 4xx, or a 500 whose body
is a request-validation error, as llama.cpp's server answers an unsupported
``response_format``). Anything else (a bad API key, a missing model, a bug), or a transient
error that outlasts its attempts, ends the run with ``RunFailed``: its message
names the node and the cause, and its ``result`` is the answer contract as far
as the run got (the reasoning chain up to the failure included). Every node is
wrapped by ``guard`` (see ``rag_graphs.nodes.builder.new_builder``), which is how the
error knows the chain: it is the failing node's own input state.

A malformed reply (empty, garbage, the wrong format, a call to an unknown
tool) is not a fault: the nodes fall back as docs/architecture.md says (structured
defaults, query fallbacks, "unknown tool" observations), so it never lands here.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from typing import Any

from langgraph.errors import GraphBubbleUp
from langgraph.runtime import get_runtime
from langgraph.types import RetryPolicy

from rag_graphs.state import RagState, add_usage, merge_documents

TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504, 529})
"""HTTP statuses worth retrying: timeout, too early, rate limit, server errors, overloaded."""

_TRANSIENT_NAMES = frozenset(
    {
        # openai / anthropic / groq / mistral SDKs, httpx, requests, LangGraph node timeouts
        "RateLimitError",
        "APITimeoutError",
        "APIConnectionError",
        "InternalServerError",
        "ServiceUnavailableError",
        "OverloadedError",
        "TimeoutException",
        "NetworkError",
        "RemoteProtocolError",
        "ReadTimeout",
        "ConnectTimeout",
        "NodeTimeoutError",
    }
)


def status_code(exc: BaseException) -> int | None:
    """The HTTP status an SDK error carries (``status_code``, or its ``response``'s), if any."""
    for holder in (exc, getattr(exc, "response", None)):
        code = getattr(holder, "status_code", None)
        if isinstance(code, int):
            return code
    return None


_INVALID_BODY = re.compile(
    r"validation error|input should be|invalid request|invalid_request|is not supported|"
    r"not supported|unsupported|unrecognized|extra inputs are not permitted|unexpected keyword",
    re.IGNORECASE,
)
"""What a server error's body says when the *request* was invalid (some servers answer 500)."""


def rejected_as_invalid(exc: BaseException) -> bool:
    """True when the server refused the request itself: the same request would fail again.

    That is a 4xx other than the transient ones (408, 425, 429), or a 5xx whose body
    is a request-validation error: llama.cpp's server answers an unsupported
    ``response_format`` with HTTP 500 and pydantic's "Input should be 'text' or
    'json_object'". Callers use it to learn what a server supports (see
    ``rag_graphs.llm.models.capabilities``); the retry policy never retries such a request.
    """
    code = status_code(exc)
    if code is None:
        return False
    if 400 <= code < 500:
        return code not in TRANSIENT_STATUS
    body = getattr(exc, "body", None)
    return code == 500 and bool(_INVALID_BODY.search(f"{exc} {body if body is not None else ''}"))


def is_transient(exc: BaseException) -> bool:
    """True for errors that may pass if the same call is tried again a little later.

    Decided by type and HTTP status; a 500 is transient unless its body says the
    request was invalid (``rejected_as_invalid``). Provider SDK errors are
    recognised by class name so no SDK has to be installed to classify them.
    A node's ``RunFailed`` (see ``guard``) is transient when its cause is.
    """
    if isinstance(exc, RunFailed):
        return exc.transient
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    code = status_code(exc)
    if code is not None:
        return not rejected_as_invalid(exc) and (code in TRANSIENT_STATUS or code >= 500)
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)


RETRY = RetryPolicy(
    initial_interval=1.0,
    backoff_factor=2.0,
    max_interval=30.0,
    max_attempts=4,
    jitter=True,
    retry_on=is_transient,
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
