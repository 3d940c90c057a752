"""Docling in a worker process, so a hostile file costs one timeout instead of the ingest.

A thread cannot be stopped, so a file that sends Docling into a loop (a
400 KB Markdown file of ``[a](`` is an hour of marko's link parsing) or
crashes it would hang or kill ingest. Docling runs in one worker process,
started on first use and kept across files and ingest calls (forkserver: a
clean, single-threaded parent that has imported Docling once, so a worker
killed for its timeout is replaced in well under a second). Where no child
process can start, conversion falls back to this process, with a warning.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from docling.datamodel.base_models import InputFormat

from rag_graphs.ingestion.convert.converter import ConvertOptions, convert_here

if TYPE_CHECKING:
    from docling_core.types.doc import DoclingDocument
    from pebble import ProcessPool

log = logging.getLogger(__name__)

_pool: ProcessPool | None = None
_pool_lock = threading.Lock()


def in_worker(path: Path, data: bytes, fmt: InputFormat, options: ConvertOptions) -> DoclingDocument:
    """``convert_here`` in the worker process, killed (and replaced) after ``options.timeout`` s."""
    from concurrent.futures.process import BrokenProcessPool

    from pebble import ProcessExpired

    try:
        future = _worker_pool().schedule(_convert_there, (path, data, fmt, options), timeout=options.timeout)
    except (AssertionError, OSError, BrokenProcessPool) as exc:  # no child process can start here:
        # a daemon process (a Celery worker...), a raw os.fork() child, no file descriptors left
        log.warning("converting %s in this process, with no timeout: %r", path, exc)
        return convert_here(path, data, fmt, options)
    try:
        return future.result()
    except TimeoutError:
        raise ValueError(f"{path}: conversion timed out after {options.timeout:g} s") from None
    except ProcessExpired as exc:  # killed by the OS (out of memory), or a crash in native code
        raise ValueError(f"{path}: the converter process died (exit code {exc.exitcode})") from None
    except BrokenProcessPool as exc:  # the worker died starting: most often an unguarded script
        raise ValueError(
            f"{path}: the converter process could not start ({exc}); a script that ingests must "
            "run under `if __name__ == '__main__':` (the worker imports the main module)"
        ) from None


def _convert_there(path: Path, data: bytes, fmt: InputFormat, options: ConvertOptions) -> DoclingDocument:
    """The worker's task: any error comes back as a ValueError naming the file (always picklable)."""
    try:
        return convert_here(path, data, fmt, options)
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - RecursionError, MemoryError, a backend's own error
        raise ValueError(f"{path}: {type(exc).__name__}: {exc}") from None


def _worker_pool() -> ProcessPool:
    """The worker pool (one process), created on first use and stopped at exit."""
    global _pool
    import multiprocessing

    from pebble import ProcessPool

    with _pool_lock:
        if _pool is None or not _pool.active:
            context: multiprocessing.context.BaseContext
            if "forkserver" in multiprocessing.get_all_start_methods():
                context = multiprocessing.get_context("forkserver")
                context.set_forkserver_preload([__name__, "docling.document_converter"])
            else:
                context = multiprocessing.get_context("spawn")
            if _pool is None:
                atexit.register(_stop_pool)
            _pool = ProcessPool(
                max_workers=1, initializer=_worker_init, initargs=(os.getpid(),), context=context
            )
        return _pool


def _stop_pool() -> None:
    if _pool is not None:
        _pool.stop()
        with contextlib.suppress(Exception):  # a worker that will not die is killed by pebble's own atexit
            _pool.join(timeout=10)


def _forget_pool() -> None:
    """In a forked child: the pool object came along, its worker and threads did not."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forget_pool)


def _worker_init(owner: int) -> None:
    """In each new worker: import Docling before any file's clock starts; exit when orphaned.

    A worker outlives an ingesting process killed with ``kill -9`` (and keeps the forkserver
    alive): it would finish a hanging file, for hours. A daemon thread ends it once ``owner``,
    the process that schedules the work, is gone.
    """
    import docling.document_converter  # noqa: F401

    def watch() -> None:
        while True:
            time.sleep(1.0)
            try:
                os.kill(owner, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:  # alive, under another user id
                pass

    threading.Thread(target=watch, name="orphan-watch", daemon=True).start()
