"""Third-party noise a user cannot act on, kept off their screen and in the debug log.

Milvus Lite serves its data directory over gRPC from a thread of this process, and what its
client and server print is about their plumbing, not the user's data:

* pymilvus asks every server for a global timestamp (``AllocTimestamp``) that Milvus Lite does
  not implement: the server logs ``Exception calling application: Method not implemented!``
  with a traceback, the client logs ``failed to get mvccTs from milvus server``, and both fall
  back to a local timestamp, which is right for one process.
* pymilvus pings its connection every 10 s while the server accepts a ping every 5 min, so
  the server answers ``GOAWAY too_many_pings`` and the client reconnects. For a server on
  loopback in this very process keepalive pings detect nothing: they are turned off
  (``LOCAL_GRPC_OPTIONS``), which removes the cause instead of hiding the message.
* Loading the embedded embedding model draws a ``Loading weights`` bar for 0.1 s of work.

The log records are re-logged at DEBUG on the ``rag_graphs.ingestion.thirdparty`` logger, so they stay
one switch away: ``RAG_GRAPHS_VERBOSE=1`` lets them through unchanged, and ``rag-graphs
--verbose`` shows the debug log on stderr.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

VERBOSE_ENV = "RAG_GRAPHS_VERBOSE"
debug_log = logging.getLogger("rag_graphs.ingestion.thirdparty")

LOCAL_GRPC_OPTIONS = {
    "grpc.keepalive_time_ms": 2**31 - 1,  # gRPC's "never"
    "grpc.keepalive_permit_without_calls": False,
}
"""Channel options for a Milvus Lite (loopback, in-process) server: no keepalive pings."""

NOISE = {
    # logger -> message beginnings it writes about Milvus Lite's missing AllocTimestamp
    "pymilvus": ("failed to get mvccTs from milvus server",),
    "grpc._server": ("Exception calling application: Method not implemented!",),
}


def verbose() -> bool:
    """True when the user asked to see third-party messages too (``RAG_GRAPHS_VERBOSE``)."""
    return os.environ.get(VERBOSE_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


class Demote(logging.Filter):
    """Moves known noise of one logger to the debug log instead of the user's screen."""

    def __init__(self, beginnings: tuple[str, ...]) -> None:
        super().__init__()
        self.beginnings = beginnings

    def filter(self, record: logging.LogRecord) -> bool:
        if verbose() or not record.getMessage().startswith(self.beginnings):
            return True
        if not getattr(record, "demoted", False):  # once, however many handlers it meets
            record.demoted = True
            debug_log.debug("%s: %s", record.name, record.getMessage(), exc_info=record.exc_info)
        return False


_installed = False
_lock = threading.Lock()


def quiet_milvus_lite() -> None:
    """Install the filters once per process (idempotent; called when a local store opens).

    A logger's own filters see only records made on it, so the filter sits on the logger
    (``grpc._server`` logs there) and on its handlers (pymilvus's modules log on child
    loggers, which reach the handler pymilvus puts on ``pymilvus``).
    """
    global _installed
    import pymilvus  # noqa: F401 - it adds its stderr handler on import: the filter goes on it

    with _lock:
        if _installed:
            return
        _installed = True
        for name, beginnings in NOISE.items():
            logger = logging.getLogger(name)
            demote = Demote(beginnings)
            logger.addFilter(demote)
            for handler in logger.handlers:
                handler.addFilter(demote)


def show_debug_log() -> None:
    """Show everything from now on: third-party messages unfiltered (``RAG_GRAPHS_VERBOSE=1``
    for this process and its workers) and the package's debug log on stderr."""
    os.environ[VERBOSE_ENV] = "1"
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    for name in ("ingestion", "rag_graphs"):
        logger = logging.getLogger(name)
        logger.setLevel(logging.DEBUG)
        logger.addHandler(handler)


@contextmanager
def no_transformers_bars() -> Iterator[None]:
    """Without transformers' progress bars for the block (restored after, if they were on)."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - transformers is a dependency
        yield
        return
    was_on = hf_logging.is_progress_bar_enabled() and not verbose()
    if was_on:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()
