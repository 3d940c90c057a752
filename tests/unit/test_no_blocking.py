"""No node blocks the event loop: every method's ``ainvoke`` under blockbuster.

``langgraph dev`` (the in-memory LangGraph API) runs graphs on its serving loop with
blockbuster active and fails the run on the first blocking call (``BlockingError:
Blocking call to os.getcwd``), so a node that resolves a path, opens the store or
loads a model on the loop works in a notebook and fails on the server. Here the
same detector watches each method's async run, stricter than the server (file
reads, ``os.stat`` and lock waits count too), with scripted models over a real
Milvus Lite store, so the failure shows in the unit suite, not first in a user's
``langgraph dev``.
"""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("blockbuster")

from blockbuster import BlockBuster, BlockingError  # noqa: E402

from rag_graphs.catalog import METHODS
from rag_graphs.methods import get_graph  # noqa: E402
from tests.adversarial import SCRIPT, obedient, recording_web_search  # noqa: E402
from tests.graphs import prepare  # noqa: E402
from tests.unit.test_faults import FAST  # noqa: E402

QUESTION = "Where was Ilsa Brandt born?"


def watched() -> BlockBuster:
    """Blockbuster as ``langgraph dev`` starts it (every module watched), minus the calls the
    test process itself makes on the loop: pytest's own assertion rewriting is exempt already."""
    return BlockBuster(excluded_modules=[])


def run_watched(coro_factory):
    """Run the coroutine ``coro_factory()`` makes on a fresh loop with blockbuster active."""
    detector = watched()

    async def main():
        detector.activate()
        try:
            return await coro_factory()
        finally:
            detector.deactivate()

    return asyncio.run(main())


def test_the_detector_catches_a_blocking_call_on_the_loop(tmp_path):
    """Control: the check can fail (an ``os.getcwd`` on the loop, as ``Path.resolve`` makes)."""

    async def blocking():
        import os

        return os.getcwd()

    with pytest.raises(BlockingError):
        run_watched(blocking)


@pytest.mark.parametrize("method", list(METHODS))
def test_no_method_blocks_the_event_loop(loaded, make_context, method):
    prepare(loaded, method)
    ctx = make_context(
        chat_model=obedient(*SCRIPT), max_steps=3, max_hops=2, web_search=recording_web_search([])
    )
    graph = get_graph(method, retry_policy=FAST)
    out = run_watched(lambda: graph.ainvoke({"question": QUESTION}, context=ctx))
    assert out["answer"] and out["usage"].get("retrievals"), out.get("error")
