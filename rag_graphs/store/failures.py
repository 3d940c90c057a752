"""A Milvus server that cannot be used, said in one line naming the URI (without its secret) and the fix.

pymilvus reports a server it cannot reach, one that refuses the credentials and a port that is
not Milvus's alike: ``MilvusException: Fail connecting to server on HOST:PORT, illegal connection
params or server unavailable``, at the end of a 60-210 line traceback. What went wrong is in the
gRPC error it chains (``UNAVAILABLE``, ``DEADLINE_EXCEEDED``, ``UNAUTHENTICATED``,
``UNIMPLEMENTED``), so the chain is read here and turned into a ``StoreUnavailableError`` (a
``ValueError``: a setting to fix, which every command prints as one ``error:`` line).
"""

from __future__ import annotations

import re

from rag_graphs.support.redaction import redact, redact_url

_AUTH_CODES = {"UNAUTHENTICATED", "PERMISSION_DENIED"}
_UNREACHABLE_CODES = {"UNAVAILABLE", "DEADLINE_EXCEEDED"}
_AUTH_TEXT = re.compile(r"auth|credential|password|unauthenticated|permission denied", re.I)
_WHERE = "--store, RAG_GRAPHS_STORE_URI"


class StoreUnavailableError(ValueError):
    """The Milvus server at the store URI cannot be used: unreachable, refusing the credentials,
    or not a Milvus server."""


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception it was raised from or during, outermost first (no cycles)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not e for e in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _grpc_codes(chain: list[BaseException]) -> set[str]:
    """The gRPC status codes (by name) of the chain's gRPC errors."""
    codes = set()
    for error in chain:
        code = getattr(error, "code", None)
        if callable(code):
            try:
                name = getattr(code(), "name", None)
            except Exception:  # noqa: BLE001 - not a gRPC error after all
                continue
            if isinstance(name, str):
                codes.add(name)
    return codes


def server_failure(uri: str, exc: BaseException) -> StoreUnavailableError:
    """The one-line error for a Milvus server at ``uri`` that failed with ``exc`` when opened."""
    shown = redact_url(uri)
    chain = _chain(exc)
    codes = _grpc_codes(chain)
    texts = " ".join(str(e) for e in chain)
    if codes & _AUTH_CODES or _AUTH_TEXT.search(texts):
        return StoreUnavailableError(
            f"the Milvus server {shown} refused the credentials (authentication failed): set "
            "MILVUS_TOKEN to a valid token ('user:password', or a Zilliz Cloud API key) for it, "
            f"or give another server ({_WHERE})"
        )
    if "UNIMPLEMENTED" in codes or "UNIMPLEMENTED" in texts:
        return StoreUnavailableError(
            f"{shown} does not answer as a Milvus server (not its gRPC port): check the port, "
            f"Milvus listens on 19530 by default ({_WHERE})"
        )
    if codes & _UNREACHABLE_CODES or "Fail connecting" in texts:
        return StoreUnavailableError(
            f"the Milvus server {shown} cannot be reached (nothing answers there, or not in time): "
            f"start it, or fix the host and port ({_WHERE}); a local path ending in .db uses "
            "Milvus Lite, no server needed"
        )
    first = redact(str(exc)).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StoreUnavailableError(
        f"the Milvus server {shown} could not be opened: {first[:300]} (check {_WHERE} and MILVUS_TOKEN)"
    )
