"""A server process on a loopback port for a test: started, waited for, and stopped."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest


def free_port() -> int:
    """A TCP port nobody listens on right now (127.0.0.1)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serving(
    command: list[str], *, health: str, log: Path, what: str, startup: float, **popen: Any
) -> Iterator[subprocess.Popen]:
    """Run ``command`` (output to ``log``) until ``health`` answers 200, hand it to the block,
    then stop it (terminate, kill after 20 s). Fails the test, with the log's tail, when the
    process exits or does not answer within ``startup`` seconds."""
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, **popen)
    try:
        deadline = time.monotonic() + startup
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"{what} did not start:\n{log.read_text(errors='replace')[-3000:]}")
            try:
                if httpx.get(health, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
