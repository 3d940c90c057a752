"""Faults of a model call: which errors may pass if the same call is tried again.

*Transient* errors are timeouts, dropped connections, rate limits (HTTP 429) and server errors
(5xx). A request the server rejected as invalid fails the same way every time
(``rejected_as_invalid``: a 4xx, or a 500 whose body is a request-validation error, as llama.cpp's
server answers an unsupported ``response_format``). The structured-output path uses this to learn
what a server supports; the nodes' retry policy and the run's failure (``RunFailed``) are built on
it in ``rag_graphs.nodes.failures``.

A malformed reply (empty, garbage, the wrong format, a call to an unknown
tool) is not a fault: the nodes fall back as docs/architecture.md says (structured
defaults, query fallbacks, "unknown tool" observations), so it never lands here.
"""

from __future__ import annotations

import re

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
    """
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    code = status_code(exc)
    if code is not None:
        return not rejected_as_invalid(exc) and (code in TRANSIENT_STATUS or code >= 500)
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)
