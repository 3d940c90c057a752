"""The victim process of ``tests/unit/test_crash_resume.py``: a graph run or an ingest to ``kill -9``.

    python -m tests.crash_worker graph --store S --db D --thread T --log L --out O [--hang-at N] [--resume]
                                       [--method auto]
    python -m tests.crash_worker ingest --folder F --store S --progress P --group G
                                        (--hang-at K | --hang-after-file M | --hang-in commit|remove_stale)

``graph`` runs ``fixed_step`` (2 hops, 5 model calls) on a Milvus Lite store of the demo corpus
(built on first use), checkpointed in ``--db`` (a SQLite file or a ``postgresql://`` URI). Its
chat model answers from the prompt alone (so every process gives the same reply to the same
step), appends every call to ``--log`` before answering, and never returns from call
``--hang-at``: the parent kills it there. With ``--resume`` the run continues the thread's last
checkpoint (``graph.invoke(None, config)``). The output contract is written to ``--out`` as
JSON. ``--method auto`` runs ``auto`` instead, whose router (the chat model: one call,
``classify``) sends the question to ``fixed_step`` as a subgraph.

``ingest`` ingests ``--folder`` with fake embeddings, ``--group`` chunks embedded per call, and
hangs in embedding call ``--hang-at`` (a group in flight, nothing of it stored) or right after
reporting file number ``--hang-after-file`` (its group stored in one insert, the rest of the run not),
or, replacing a changed file, after its new chunks are inserted: before their commit (``--hang-in
commit``) or before the old version's delete (``--hang-in remove_stale``); each stored file and
the hang are lines of ``--progress``. ``--store`` may be a Milvus server URI.

Everything is offline and deterministic: ``DeterministicFakeEmbedding(size=32)`` as in conftest.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

QUESTION = "In which town was the founder of the Velmora Institute born?"
COLLECTION = "test"
HANG_SECONDS = 3600.0
REPLIES = {
    "classify": '{"kind": "multi_hop"}',
    "first_query": "Search query: who founded the Velmora Institute",
    "next_query": "Ilsa Brandt birthplace",
    "generate": "The founder, Ilsa Brandt, was born in Korvik [2].",
}
"""The reply of each model step of ``fixed_step`` (``intermediate`` depends on the hop's query)."""


def embeddings() -> DeterministicFakeEmbedding:
    """The fake embeddings every store of these tests is built and searched with."""
    return DeterministicFakeEmbedding(size=32)


def _append(path: str, row: dict[str, Any]) -> None:
    """Append one JSON line and push it to the OS, so a ``kill -9`` right after cannot lose it."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def _hang(log: str, row: dict[str, Any]) -> None:
    """Say where the process stopped, then wait to be killed."""
    _append(log, {**row, "event": "hang"})
    time.sleep(HANG_SECONDS)
    raise RuntimeError("the parent test never killed this process")


def step_of(messages: list[BaseMessage]) -> str:
    """Which ``fixed_step`` node sent ``messages``, read from its system prompt."""
    system = str(messages[0].content)
    for marker, step in (
        ("You route questions", "classify"),
        ("finds the first fact", "first_query"),
        ("the next missing fact", "next_query"),
        ("answer a search query in one short sentence", "intermediate"),
        ("answer questions that need several facts", "generate"),
    ):
        if marker in system:
            return step
    raise ValueError(f"unexpected prompt: {system[:200]!r}")


class PromptScriptedChat(BaseChatModel):
    """A chat model whose reply depends only on the prompt; logs every call; hangs on call ``hang_at``."""

    log: str
    hang_at: int = 0
    _calls: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "prompt-scripted"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self._calls += 1
        step = step_of(messages)
        row = {"pid": os.getpid(), "call": self._calls, "step": step}
        if self._calls == self.hang_at:
            _hang(self.log, row)
        _append(self.log, {**row, "event": "call"})
        if step == "intermediate":
            query = str(messages[-1].content).rsplit("Search query:", 1)[-1]
            reply = "Korvik." if "birthplace" in query else "Ilsa Brandt founded it [1]."
        else:
            reply = REPLIES[step]
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])


def ensure_demo_store(store: str) -> None:
    """Ingest the demo corpus into ``store`` unless it already holds it."""
    from rag_graphs.ingestion import IngestOptions, ingest
    from rag_graphs.store import open_index

    index = open_index(store, COLLECTION, embeddings())
    if index.count() == 0:
        corpus = Path(str(resources.files("rag_graphs").joinpath("demo_corpus")))
        report = ingest([corpus], index=index, options=IngestOptions(progress=False))
        if report.failed or not report.added:
            raise RuntimeError(report.summary())


def run_graph(
    store: str,
    db: str,
    thread: str,
    log: str,
    *,
    hang_at: int = 0,
    resume: bool = False,
    method: str = "fixed_step",
) -> dict:
    """Run (or resume) ``method`` on ``thread``, checkpointed in ``db`` (a SQLite file or a PostgreSQL
    URI, through ``rag_graphs.run.checkpointers``, which holds the thread's lock); a JSON-able summary."""
    from rag_graphs.config.context import RagContext
    from rag_graphs.methods import get_graph
    from rag_graphs.run.checkpointers import thread_saver
    from rag_graphs.store import open_index

    ensure_demo_store(store)
    index = open_index(store, COLLECTION, embeddings())
    context = RagContext(
        chat_model=PromptScriptedChat(log=log, hang_at=hang_at),
        embeddings=index.embeddings,
        store_uri=store,
        collection=COLLECTION,
        k=2,
        fixed_hops=2,
        router="llm",  # auto's
        routes={"multi_hop": "fixed_step"},
    )
    with thread_saver(db, thread) as saver:
        graph = get_graph(method, checkpointer=saver)
        config = {"configurable": {"thread_id": thread}}
        out = graph.invoke(None if resume else {"question": QUESTION}, config=config, context=context)
        pending = list(graph.get_state(config).next)
    return {
        "keys": sorted(out),
        "answer": out.get("answer"),
        "citations": out.get("citations"),
        "documents": [
            {"type": type(d).__name__, "id": getattr(d, "id", None), "source": d.metadata.get("source")}
            if hasattr(d, "metadata")
            else {"type": type(d).__name__}
            for d in out.get("documents", [])
        ],
        "steps": out.get("steps"),
        "usage": out.get("usage"),
        "pending": pending,
    }


class HangingEmbeddings(DeterministicFakeEmbedding):
    """``embeddings()`` that logs each ``embed_documents`` call and hangs on call ``hang_at``."""

    progress: str
    hang_at: int
    _calls: int = PrivateAttr(default=0)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self._calls += 1
        if self._calls == self.hang_at:
            _hang(self.progress, {"pid": os.getpid(), "call": self._calls, "texts": len(texts)})
        return super().embed_documents(texts)


def _hang_in(step: str, progress: str) -> None:
    """Make a changed file's replacement hang at ``step``: ``commit`` (its new chunks inserted, not
    committed) or ``remove_stale`` (committed, the old chunks not deleted)."""
    import rag_graphs.ingestion.storing as storing
    from rag_graphs.store.replacing import Replacement

    def hang(*args: Any, **kwargs: Any) -> None:
        _hang(progress, {"pid": os.getpid(), "in": step})

    if step == "commit":
        Replacement.commit = hang  # type: ignore[method-assign]
    elif step == "remove_stale":
        storing._remove_stale = hang  # type: ignore[assignment]
    else:
        raise ValueError(f"--hang-in {step!r}: use commit or remove_stale")


def run_ingest(
    folder: str,
    store: str,
    progress: str,
    *,
    group: int,
    hang_at: int = 0,
    hang_after_file: int = 0,
    hang_in: str = "",
) -> None:
    """Ingest ``folder`` into ``store``, ``group`` chunks per embedding call; hang in embedding call
    ``hang_at`` or after storing file number ``hang_after_file`` (0: never)."""
    import rag_graphs.ingestion.pipeline as pipeline
    from rag_graphs.ingestion import FileResult, IngestOptions, ingest
    from rag_graphs.store import ChunkIndex

    if not hasattr(pipeline, "EMBED_GROUP"):
        raise RuntimeError("rag_graphs.ingestion.pipeline.EMBED_GROUP is gone: update tests/crash_worker.py")
    pipeline.EMBED_GROUP = group  # many small groups: many points where files are stored
    if hang_in:
        _hang_in(hang_in, progress)
    model = HangingEmbeddings(size=32, progress=progress, hang_at=hang_at)
    index = ChunkIndex(uri=store, collection=COLLECTION, embeddings=model)

    stored: list[str] = []

    def on_file(result: FileResult) -> None:
        stored.append(result.path)
        row = {"event": "file", "path": result.path, "added": result.added, "error": result.error}
        _append(progress, row)
        if len(stored) == hang_after_file:
            _hang(progress, {"pid": os.getpid(), "file": len(stored)})

    # no entity graph: its entity-name embedding calls would shift the call the run hangs in
    ingest([folder], index=index, options=IngestOptions(progress=False, on_file=on_file, entities=None))
    _append(progress, {"event": "done"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    modes = parser.add_subparsers(dest="mode", required=True)
    graph = modes.add_parser("graph")
    for name in ("--store", "--db", "--thread", "--log", "--out"):
        graph.add_argument(name, required=True)
    graph.add_argument("--hang-at", type=int, default=0)
    graph.add_argument("--resume", action="store_true")
    graph.add_argument("--method", choices=("fixed_step", "auto"), default="fixed_step")
    ingest = modes.add_parser("ingest")
    for name in ("--folder", "--store", "--progress"):
        ingest.add_argument(name, required=True)
    ingest.add_argument("--group", type=int, required=True)
    ingest.add_argument("--hang-at", type=int, default=0)
    ingest.add_argument("--hang-after-file", type=int, default=0)
    ingest.add_argument("--hang-in", choices=("commit", "remove_stale"), default="")
    args = parser.parse_args(argv)
    if args.mode == "graph":
        result = run_graph(
            args.store,
            args.db,
            args.thread,
            args.log,
            hang_at=args.hang_at,
            resume=args.resume,
            method=args.method,
        )
        Path(args.out).write_text(json.dumps(result, default=str))
    else:
        run_ingest(
            args.folder,
            args.store,
            args.progress,
            group=args.group,
            hang_at=args.hang_at,
            hang_after_file=args.hang_after_file,
            hang_in=args.hang_in,
        )
    return 0


if __name__ == "__main__":
    for _var in [v for v in os.environ if v.startswith("RAG_GRAPHS_")]:
        del os.environ[_var]  # like conftest: never the user's settings
    sys.exit(main())
