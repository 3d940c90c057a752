"""One node body, two drivers: model and store calls are yielded, then run sync or async.

A node body is a generator. Where it needs a model reply (or a search) it
yields a ``Call``; where it needs several independent replies (grading each
passage, answering each sub-question) it yields a ``Batch`` of sub-bodies. The
driver runs what was yielded and sends the result back in:

    def body(state, ctx):
        reply = yield Call(model, messages)
        grades = yield Batch([grade_one(doc) for doc in docs])
        return {"answer": reply.content, ...}

``drive`` runs a body with ``invoke`` (a batch on a bounded thread pool that
keeps the run's context variables), ``adrive`` with ``ainvoke`` (a batch
gathered under a semaphore). So every node is written once and is native on
both ``graph.invoke`` and ``graph.ainvoke``, and fan-out calls never run
one by one.

``adrive`` runs the body's own code between yields in a worker thread (with the
run's context variables): opening the store, resolving its path, loading a model
or reading a prompt file are blocking calls, which on the event loop stall every
other run of a server (``langgraph dev`` fails the run with blockbuster's
``BlockingError``). An exception a call raises is thrown into the body at its
``yield``, so ``try``/``except`` around a yield works as around a call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import get_executor_for_config
from langchain_core.runnables.utils import gather_with_concurrency

T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """Run ``runnable`` on ``input`` (``invoke`` or ``ainvoke``); the yield returns its output."""

    runnable: Runnable
    input: Any
    config: RunnableConfig | None = None


@dataclass(frozen=True)
class Batch:
    """Run sub-bodies side by side, at most ``max_concurrency`` at a time; the yield returns
    their results in order."""

    bodies: list[Generator[Any, Any, Any]]
    max_concurrency: int = 4


Body = Generator["Call | Batch", Any, T]


def drive(body: Body[T]) -> T:
    """Run ``body`` to its return value, synchronously."""
    try:
        request = next(body)
        while True:
            try:
                result = _run(request)
            except Exception as exc:  # the body decides: catch it at its yield, or let it rise
                request = body.throw(exc)
            else:
                request = body.send(result)
    except StopIteration as stop:
        return stop.value


async def adrive(body: Body[T]) -> T:
    """Run ``body`` to its return value: its calls awaited on the event loop, its own code
    between them in a worker thread (``asyncio.to_thread``), never blocking the loop."""
    done, value = await asyncio.to_thread(_advance, body, None, None)
    while not done:
        try:
            result = await _arun(value)
        except Exception as exc:
            done, value = await asyncio.to_thread(_advance, body, None, exc)
        else:
            done, value = await asyncio.to_thread(_advance, body, result, None)
    return value


def _advance(body: Body[Any], result: Any, error: Exception | None) -> tuple[bool, Any]:
    """Resume ``body`` (with ``result``, or ``error`` thrown in): ``(False, next request)`` or
    ``(True, return value)``. A future cannot carry ``StopIteration``, so it never leaves here."""
    try:
        return False, (body.throw(error) if error is not None else body.send(result))
    except StopIteration as stop:
        return True, stop.value


def _run(request: Call | Batch) -> Any:
    if isinstance(request, Call):
        return request.runnable.invoke(request.input, request.config)
    if len(request.bodies) <= 1:
        return [drive(b) for b in request.bodies]
    with get_executor_for_config({"max_concurrency": request.max_concurrency}) as pool:
        return list(pool.map(drive, request.bodies))


async def _arun(request: Call | Batch) -> Any:
    if isinstance(request, Call):
        return await request.runnable.ainvoke(request.input, request.config)
    return await gather_with_concurrency(request.max_concurrency, *(adrive(b) for b in request.bodies))
