"""Run a method on a question: once, streamed, or resumed on a checkpointed thread.

The CLI, the notebooks and the evaluator all run graphs the same way, so the
rules live here once rather than in the command line where nothing else could
reuse them:

- **Run** (``run`` / ``arun``): the answer contract as a dict. A run that ends at
  a failing node raises ``RunFailed`` (its ``result`` is the chain as far as it
  got), or, with ``raise_on_failure=False``, returns that partial result, which
  then carries an ``error`` message.
- **Stream** (``stream`` / ``astream``): the same run as events, in order:
  ``Resumed`` (a checkpointed thread picked up), ``Progress`` (a node's custom
  progress event), ``StepEvent`` (a reasoning step the moment a node writes it),
  ``Waiting`` (stopped for a person) and last ``Finished`` (the result).
- **Wait for a person** (``RagContext.interrupts``, on a ``thread_id``): a run that stops for a
  person's answer yields ``Waiting`` (the JSON payloads) and ends with them as ``interrupts``;
  the same call with ``resume=<answer>`` continues it (``rag_graphs.run.waiting``).
- **Resume**: with a ``thread_id``, every step is checkpointed in ``checkpoints``: a SQLite
  file, or a PostgreSQL URI shared by workers (``run.checkpointers``).
  Asking the same question on the same thread again continues a killed or failed
  run from its last completed step (nothing before it runs twice); a finished
  thread returns its stored result without running anything, when it was the same run (method,
  store, access labels, store state: ``run.threads.replay_key``; else it runs anew). Another question
  follows a finished run as on a new thread (``begin`` resets the run state); beside an
  unfinished one (killed, failed, stopped) it is a ``ThreadConflict``: that run stays resumable.
- **Stop before the answer** (``stop_before_answer=True``): the run ends where the
  method would write its answer (LangGraph's ``interrupt_before`` on ``ANSWER_NODES``),
  so its final context (``documents``, one ranking, best first), ``steps`` and
  ``usage`` cost no answer call: how ``rag-graphs eval --retrieval-only`` measures
  retrieval (``auto``: inside the method it routes to). See ``RunOptions.stop_before_answer``.

Example::

    from rag_graphs.run import run, stream, Progress, Finished

    out = run("ircot", "Where was the founder of Django born?", ctx)
    for event in stream("ircot", question, ctx, thread_id="q1"):
        if isinstance(event, Progress):
            print(event.node, event.event)
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typing_extensions import TypedDict, Unpack

from rag_graphs.config.context import RagContext
from rag_graphs.config.threads import DEFAULT_CHECKPOINTS
from rag_graphs.run.events import Finished, Progress, Resumed, RunEvent, StepEvent, ThreadConflict, Waiting
from rag_graphs.run.savers import asaver, saver
from rag_graphs.run.threads import REPLAY_KEYS, replay_key
from rag_graphs.run.waiting import NO_ANSWER, check_thread, ending, pending, resume_input, waiting

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.types import StateSnapshot

    from rag_graphs.nodes.failures import RunFailed

ANSWER_NODES = ("generate", "answer_directly")
"""The nodes that write a method's answer (the same names in every method): where
``stop_before_answer`` stops a run."""

STREAM_MODES = ("custom", "updates", "values")
"""Progress events, each node's update (for its steps), and the state after each step (the result)."""


class RunOptions(TypedDict, total=False):
    """The keyword options every entry point takes (``run``, ``arun``, ``stream``, ``astream``)."""

    thread_id: str | None
    """Checkpoint every step under this id in ``checkpoints``, so the same call again
    continues a killed or failed run, or returns the stored result of a finished one."""
    checkpoints: str | Path
    """The SQLite file of thread checkpoints (default ``DEFAULT_CHECKPOINTS``), or a
    ``postgresql://`` URI (a ``str``: a ``Path`` folds its ``//``) shared by many workers."""
    config: RunnableConfig | None
    """The LangGraph run config (callbacks, tags, metadata); by default
    ``trace_config(context, method)``, which names the run in traces."""
    raise_on_failure: bool
    """True (default) raises ``RunFailed`` when a node fails for good; False ends the run
    with its partial result instead (with ``error`` set): for loops that must go on."""
    stop_before_answer: bool
    """True ends the run right before a node of ``ANSWER_NODES`` would run (``auto``'s own
    ``answer_directly``, or the answer node of the method it routes to): the result is the
    state so far (``documents``, the final context as one ranking; ``steps``; ``usage``), with
    ``answer`` and ``citations`` empty and ``stopped_before`` naming the node. Without
    ``thread_id`` the run checkpoints in memory (an ``InMemorySaver`` of its own); on a
    ``thread_id``, calling again with this False writes the answer from the stored context,
    with it True returns the stored context again. A run that answers elsewhere carries its
    answer and no ``stopped_before``: IterDRAG when ``iterate`` answers, ReAct when its agent does."""
    resume: Any
    """The person's answer to the thread's run waiting for one (``Waiting``; with the context it
    was started with): the run continues with it. Left out, a waiting thread yields its
    ``Waiting`` again and runs nothing; given to a thread that waits for nothing, a ``ValueError``."""


def run(
    method: str, question: str, context: RagContext | None = None, **options: Unpack[RunOptions]
) -> dict[str, Any]:
    """Answer ``question`` with ``method`` (a name in ``METHODS``); the answer contract as a dict.

    ``context`` defaults to ``RagContext()`` (environment settings); ``options`` are
    described in ``RunOptions``.

    Raises:
        RunFailed: a node failed for good (unless ``raise_on_failure`` is False).
        ThreadConflict: ``thread_id`` holds a run of another question.
        ValueError: unknown method.
    """
    events = _events(_Run(method, question, context, modes=("values",), **options))
    return [event.result for event in events if isinstance(event, Finished)][-1]


async def arun(
    method: str, question: str, context: RagContext | None = None, **options: Unpack[RunOptions]
) -> dict[str, Any]:
    """``run`` for event loops (notebooks, servers): async nodes are awaited, not run in threads."""
    events = _aevents(_Run(method, question, context, modes=("values",), **options))
    return [event.result async for event in events if isinstance(event, Finished)][-1]


def stream(
    method: str, question: str, context: RagContext | None = None, **options: Unpack[RunOptions]
) -> Iterator[RunEvent]:
    """Run like ``run``, yielding ``Resumed``, ``Progress`` and ``StepEvent`` events as they happen,
    then ``Finished`` (a failed run's partial result when ``raise_on_failure`` is False)."""
    return _events(_Run(method, question, context, **options))


def astream(
    method: str, question: str, context: RagContext | None = None, **options: Unpack[RunOptions]
) -> AsyncIterator[RunEvent]:
    """``stream`` for event loops: ``async for event in astream(...)``."""
    return _aevents(_Run(method, question, context, **options))


# -- one run's rules, shared by the sync and async drivers --------------------------------------


@dataclass
class _Run:
    """One run's settings and its progress: everything but the (sync or async) I/O."""

    method: str
    question: str
    context: RagContext | None = None
    thread_id: str | None = None
    checkpoints: str | Path = DEFAULT_CHECKPOINTS
    config: RunnableConfig | None = None
    raise_on_failure: bool = True
    stop_before_answer: bool = False
    resume: Any = NO_ANSWER
    modes: tuple[str, ...] = STREAM_MODES
    inputs: Any = None
    done: bool = False
    result: dict[str, Any] = field(default_factory=dict)
    steps: int = 0
    nested: frozenset[str] = frozenset()  # the graph's nodes that run a subgraph (auto's methods)

    def graph(self, saver: BaseCheckpointSaver[Any] | None) -> CompiledStateGraph[Any, Any, Any, Any]:
        """The method's graph; a fresh compilation bound to ``saver`` when there is a thread."""
        from rag_graphs.methods import get_graph

        graph = get_graph(self.method, checkpointer=saver)
        self.nested = frozenset(name for name, _ in graph.get_subgraphs())
        return graph

    @functools.cached_property
    def checkpoint_thread(self) -> str | None:
        """The thread the run checkpoints under: the caller's, or a private one when
        ``stop_before_answer`` needs a checkpointer for its interrupt; None: no checkpoints."""
        if self.thread_id is None and self.stop_before_answer:
            return f"stop-before-answer-{uuid.uuid4().hex}"
        return self.thread_id

    def stream_kwargs(self, graph: CompiledStateGraph[Any, Any, Any, Any]) -> dict[str, Any]:
        """``stream_args``, and ``interrupt_before=`` the graph's answer nodes when the run stops there."""
        if not self.stop_before_answer:
            return self.stream_args
        return {**self.stream_args, "interrupt_before": [n for n in ANSWER_NODES if n in graph.nodes]}

    @functools.cached_property
    def stream_args(self) -> dict[str, Any]:
        """Keyword arguments of ``graph.stream`` / ``graph.astream`` (besides the input)."""
        from rag_graphs.config.tracing import trace_config
        from rag_graphs.nodes.subgraphs import INTERRUPT_SUBGRAPHS_BEFORE

        ctx = self.context or RagContext()
        config: dict[str, Any] = dict(
            self.config if self.config is not None else trace_config(ctx, self.method)
        )
        configurable = config["configurable"] = dict(config.get("configurable", {}))
        if self.checkpoint_thread is not None:
            configurable["thread_id"] = self.checkpoint_thread
            config["metadata"] = {**config.get("metadata", {}), **self.replay}
        if self.stop_before_answer:  # interrupt_before reaches no subgraph: auto's method reads this
            configurable[INTERRUPT_SUBGRAPHS_BEFORE] = list(ANSWER_NODES)
        return {"context": ctx, "config": config, "stream_mode": list(self.modes), "subgraphs": True}

    def start(self, state: StateSnapshot | None) -> list[RunEvent]:
        """Decide the graph's input from the thread's saved state (None: no thread).

        A thread never run (or no thread) starts from the question. A saved run of
        the same question continues (LangGraph's input ``None`` means "from the last
        checkpoint"), or, finished, yields its stored result and sets ``done``; so does
        a run stopped before its answer when this run stops there too. Another question
        follows a finished run (``begin`` resets the state) and is refused beside an
        unfinished one, which stays resumable (``ThreadConflict``).
        """
        from rag_graphs.nodes.subgraphs import contract

        check_thread(self.context or RagContext(), self.thread_id, self.resume)
        if self.resume is not NO_ANSWER and self.thread_id is not None:  # a person's answer
            if state is not None and state.values.get("question") not in (None, self.question):
                raise ThreadConflict(f"thread {self.thread_id!r} waits on another question's run")
            self.inputs = resume_input(self.thread_id, state, self.resume)
            return [Resumed(self.thread_id, tuple(state.next if state else ()))]
        if state is None or not state.values or self.thread_id is None:
            self.inputs = {"question": self.question}
            return []
        stored = state.values.get("question")
        before = {key: dict(state.metadata or {}).get(key) for key in REPLAY_KEYS}
        if stored == self.question and not state.next and before != self.replay:
            self.inputs = {"question": self.question}  # finished, but not this run: runs anew
            return []
        if stored == self.question and state.next and before[REPLAY_KEYS[0]] != self.replay[REPLAY_KEYS[0]]:
            raise ThreadConflict(
                f"thread {self.thread_id!r} holds an unfinished run of this question under other "
                "settings (method, store, collection or access labels): resume it with those, or use a "
                "new --thread-id"
            )
        if stored != self.question:
            if state.next:
                raise ThreadConflict(
                    f"thread {self.thread_id!r} holds an unfinished run of another question "
                    f"({stored!r}, next: {', '.join(state.next)}): ask that question again to resume "
                    "it, or use a new --thread-id"
                )
            self.inputs = {"question": self.question}
            return []
        resumed = Resumed(self.thread_id, tuple(state.next))
        if asked := pending(state):  # waiting for a person: show the question again
            self.done = True
            return [resumed, *waiting(self.thread_id, asked, contract(state.values))]
        stopped = self.stopped(state)
        self.done = resumed.finished or stopped is not None
        if not self.done:
            return [resumed]
        return [resumed, Finished(stopped or contract(state.values))]

    @functools.cached_property
    def replay(self) -> dict[str, str]:
        """This run's ``replay_key`` (the store's state read now, before the run reads anything)."""
        from rag_graphs.search.retrieval import index_for

        ctx = self.context or RagContext()
        try:
            state = index_for(ctx).fingerprint() if ctx.retriever is None else "own"
        except Exception as exc:  # noqa: BLE001 - a missing store fails in begin, naming it
            state = f"unreadable: {type(exc).__name__}"
        return replay_key(self.method, self.question, ctx, state)

    def stopped(self, state: StateSnapshot | None) -> dict[str, Any] | None:
        """The result when this run stops before its answer and the checkpointed run (or its
        subgraph, ``auto``'s routed method) waits there: the answer contract so far, no answer."""
        from rag_graphs.nodes.subgraphs import waiting_before

        stop = waiting_before(state, ANSWER_NODES) if state is not None and self.stop_before_answer else None
        return None if stop is None else {**stop[1], "answer": "", "citations": [], "stopped_before": stop[0]}

    def read(self, namespace: tuple[str, ...], mode: str, chunk: Any) -> list[RunEvent]:
        """Events of one ``(namespace, mode, chunk)`` of LangGraph's stream (``()``: the graph's own,
        whose state is kept); a subgraph's steps are read as it writes them, not from its node's update."""
        if mode == "custom" and isinstance(chunk, Mapping):
            details = {k: v for k, v in chunk.items() if k not in ("node", "event")}
            return [Progress(str(chunk.get("node", "")), str(chunk.get("event", "")), details)]
        if mode == "updates" and isinstance(chunk, Mapping) and len(namespace) <= 1:
            events: list[RunEvent] = []
            for node, update in chunk.items():
                if not namespace and node in self.nested:
                    continue
                written = update.get("steps", []) if isinstance(update, Mapping) else []
                for step in written if isinstance(written, list) else []:  # not begin's reset
                    self.steps += 1
                    events.append(StepEvent(self.steps, step))
            return events
        if mode == "values" and isinstance(chunk, Mapping) and not namespace:
            self.result = dict(chunk)
        return []

    def fail(self, error: RunFailed) -> Finished:
        """A failed run's partial result, unless the caller wants ``RunFailed`` raised."""
        if self.raise_on_failure:
            raise error
        return Finished(error.result)


def _events(run: _Run) -> Iterator[RunEvent]:
    from langgraph.errors import GraphRecursionError

    from rag_graphs.nodes.failures import RunFailed, recursion_failure  # imported when a run starts

    with saver(run) as checkpointer:
        graph = run.graph(checkpointer)
        config = run.stream_args["config"]
        yield from run.start(graph.get_state(config, subgraphs=True) if run.thread_id is not None else None)
        if run.done:
            return
        try:
            for namespace, mode, chunk in graph.stream(run.inputs, **run.stream_kwargs(graph)):
                yield from run.read(namespace, mode, chunk)
        except RunFailed as error:
            yield run.fail(error)
            return
        except GraphRecursionError as error:
            yield run.fail(recursion_failure(error, run.result))
            return
        state = graph.get_state(config, subgraphs=True) if run.stop_before_answer else None
        yield from ending(run.checkpoint_thread, run.stopped(state) or run.result)


async def _aevents(run: _Run) -> AsyncIterator[RunEvent]:
    from langgraph.errors import GraphRecursionError

    from rag_graphs.nodes.failures import RunFailed, recursion_failure

    async with asaver(run) as checkpointer:
        graph = run.graph(checkpointer)
        config = run.stream_args["config"]
        saved = await graph.aget_state(config, subgraphs=True) if run.thread_id is not None else None
        for event in run.start(saved):
            yield event
        if run.done:
            return
        try:
            async for namespace, mode, chunk in graph.astream(run.inputs, **run.stream_kwargs(graph)):
                for event in run.read(namespace, mode, chunk):
                    yield event
        except RunFailed as error:
            yield run.fail(error)
            return
        except GraphRecursionError as error:
            yield run.fail(recursion_failure(error, run.result))
            return
        state = await graph.aget_state(config, subgraphs=True) if run.stop_before_answer else None
        for event in ending(run.checkpoint_thread, run.stopped(state) or run.result):
            yield event


__all__ = [
    "ANSWER_NODES",
    "DEFAULT_CHECKPOINTS",
    "Finished",
    "Progress",
    "Resumed",
    "RunEvent",
    "RunOptions",
    "StepEvent",
    "ThreadConflict",
    "Waiting",
    "arun",
    "astream",
    "run",
    "stream",
]
