"""The indexing graph: add, delete and relabel what the store holds, served beside the methods.

    START -> check -> delete -> relabel -> add -> END

``langgraph.json`` serves it as ``index`` (and the LangGraph server as an MCP tool at ``/mcp``),
so a client that asks the method graphs questions can also fill the store they search, as
langchain-ai's rag-research-agent-template serves its index graph beside its retrieval graph.
It does what ``rag-graphs ingest`` (files, folders, URLs; ``--delete``; other ``--tenant`` /
``--tag``) does, plus raw texts, and returns the ingest report as JSON-able data.

``check`` reads the whole request and every target before anything is written: a bad value is
one line naming the field (``rag_graphs.serve.requests``), a target the caller cannot read is
refused (``rag_graphs.serve.access``), and the store is left as it was. ``check`` hands nothing on
to the nodes after it: each write node reads the request and the caller's access again and checks
its own part before it writes (a served thread's state is its client's to read, and was its to
edit: see ``_plan``). On a served deployment
(``RAG_GRAPHS_SERVED``) the run's context is the caller's narrowed access, so what is written
carries the caller's tenant and only the caller's sources can be deleted or relabelled; files on
the server are read only under the folders ``RAG_GRAPHS_INDEX_FILES`` names, and URLs never
reach the server's own network (the ingest's SSRF guard, with no client-set way around it).
Every node is a plain function, so LangGraph runs it in a worker thread on ``ainvoke``: the
server's event loop never waits on Docling, the embedder or Milvus.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from rag_graphs.config.context import RagContext
from rag_graphs.config.runtime import get_context, served
from rag_graphs.serve.access import caller_sources, check_writable, write_labels
from rag_graphs.serve.requests import (
    AddReport,
    IndexOutput,
    IndexRequest,
    IndexRequestError,
    IndexState,
    RelabelItem,
    TextItem,
    parse_request,
)

if TYPE_CHECKING:
    from rag_graphs.store import ChunkIndex

FILES_ROOTS = "RAG_GRAPHS_INDEX_FILES"
"""Environment variable: the folders (``os.pathsep``-separated) a served indexing graph may read
files from. Unset, a served caller may add URLs and texts only: a path is the server's file."""


def check(state: IndexState, runtime: Runtime[RagContext]) -> dict[str, Any]:
    """Check the whole request, every target and label, before anything is written: one bad value
    or target leaves the store as it was. It hands nothing on: each write node checks its own part
    again (``_plan``), so nothing in the thread's state is trusted because this node ran."""
    from rag_graphs.search.retrieval import index_for

    ctx, request = _plan(state, runtime)
    index = index_for(ctx)
    _added_labels(index, ctx, request)
    gone = {s for sources in _deleted(index, ctx, request).values() for s in sources}
    for item, sources, _ in _relabelled(index, ctx, request):
        if gone & set(sources):
            raise IndexRequestError(f"IndexRequest.relabel: {item.source!r} is also deleted by this request")
    return {}


def delete(state: IndexState, runtime: Runtime[RagContext]) -> dict[str, Any]:
    """Remove every chunk of the delete targets the caller may change (and what is derived from them)."""
    from rag_graphs.search.retrieval import index_for

    ctx, request = _plan(state, runtime)
    if not request.delete:
        return {"deleted": []}
    index = index_for(ctx)
    deleted = [
        {"target": target, "sources": sources, "chunks": sum(index.delete_source(s) for s in sources)}
        for target, sources in _deleted(index, ctx, request).items()
    ]
    index.flush()
    return {"deleted": deleted}


def relabel(state: IndexState, runtime: Runtime[RagContext]) -> dict[str, Any]:
    """Store the relabel targets' chunks again under their new labels, as the caller may."""
    from rag_graphs.search.retrieval import index_for
    from rag_graphs.serve.relabel import relabel_source

    ctx, request = _plan(state, runtime)
    if not request.relabel:
        return {"relabelled": []}
    index = index_for(ctx)
    done = []
    for _, sources, labels in _relabelled(index, ctx, request):
        for source in sources:
            chunks = relabel_source(index, source, labels)
            done.append(
                {"source": source, "chunks": chunks, "tenant": labels["tenant"], "tags": labels["tags"]}
            )
    return {"relabelled": done}


def add(state: IndexState, runtime: Runtime[RagContext]) -> dict[str, Any]:
    """Ingest the files, URLs and texts under the caller's labels; report as ``rag-graphs ingest``."""
    from rag_graphs.ingestion import IngestOptions, Text, ingest
    from rag_graphs.search.retrieval import index_for

    ctx, request = _plan(state, runtime)
    index = index_for(ctx)
    out: dict[str, Any] = {}
    if request.files or request.urls or request.texts:
        labels = _added_labels(index, ctx, request)
        report = ingest(
            [*request.files, *request.urls, *(Text(t.source, t.text, t.format) for t in request.texts)],
            index=index,
            options=IngestOptions(
                progress=False, tenant=labels["tenant"], tags=tuple(labels["tags"]), force=request.force
            ),
        )
        out["added"] = AddReport(
            files=[asdict(f) for f in report.files],  # type: ignore[misc]
            chunks=report.chunks,
            added=report.added,
            failed=len(report.failed),
            skipped=[str(s) for s in report.skipped],
            graph=report.graph,
            seconds=round(report.seconds, 3),
        )
        summary = [report.summary()]
    else:
        summary = []
    out["total_chunks_in_store"] = index.count()
    out["summary"] = "\n".join([*_changes(state), *summary]) or "nothing changed"
    return out


def _plan(state: IndexState, runtime: Runtime[RagContext]) -> tuple[RagContext, IndexRequest]:
    """The caller's context (their access, from the run's server-side user: never from the
    thread's state) and the request in ``state``'s input fields, checked again.

    Every node calls this, since a served thread's state is the client's to read, and was its
    to edit (``threads.update_state``, a ``goto`` command, an interrupt and a resume: attack
    round 4 deleted and relabelled another tenant's sources, and ingested a file outside
    ``RAG_GRAPHS_INDEX_FILES``, by editing what ``check`` had resolved). The auth handler now
    refuses those edits too (``rag_graphs.serve.auth``); this holds without it.
    """
    return get_context(runtime), parse_request(dict(state))


def _deleted(index: ChunkIndex, ctx: RagContext, request: IndexRequest) -> dict[str, list[str]]:
    """Each delete target -> the stored sources it names that the caller may delete."""
    return caller_sources(index, ctx, request.delete, "delete")


def _relabelled(
    index: ChunkIndex, ctx: RagContext, request: IndexRequest
) -> list[tuple[RelabelItem, list[str], dict[str, Any]]]:
    """Each relabel item, the stored sources it names that the caller may change, and the labels
    to store them under (the caller's tenant, tags among the caller's)."""
    labels = [
        write_labels(ctx, r.tenant, r.tags, f"IndexRequest.relabel[{i}]")
        for i, r in enumerate(request.relabel)
    ]
    moved = caller_sources(index, ctx, [r.source for r in request.relabel], "relabel")
    return [(r, moved[r.source], item) for r, item in zip(request.relabel, labels, strict=True)]


def _added_labels(index: ChunkIndex, ctx: RagContext, request: IndexRequest) -> dict[str, Any]:
    """The labels the additions are stored under, once every file, text and name is checked."""
    labels = write_labels(ctx, request.tenant, request.tags, "IndexRequest")
    for file in request.files:
        _check_file(file)
    _unique_texts(request.texts)
    check_writable(index, ctx, _added(request))
    return labels


def _changes(state: IndexState) -> list[str]:
    lines = [
        f"deleted {d['chunks']} chunks of {len(d['sources'])} source(s) under {d['target']}"
        for d in state.get("deleted") or []
    ]
    lines += [
        f"relabelled {r['source']} ({r['chunks']} chunks): tenant {r['tenant']!r}, tags {r['tags']}"
        for r in state.get("relabelled") or []
    ]
    return lines


def _added(request: IndexRequest) -> list[tuple[str, str]]:
    """``(field, source)`` of everything the request adds, as the store will name it."""
    return [
        *((f"IndexRequest.files[{i}]", f) for i, f in enumerate(request.files)),
        *((f"IndexRequest.urls[{i}]", u) for i, u in enumerate(request.urls)),
        *((f"IndexRequest.texts[{i}].source", t.key) for i, t in enumerate(request.texts)),
    ]


def _check_file(file: str) -> None:
    """Refuse a file that does not exist, or on a served deployment lies outside ``FILES_ROOTS``."""
    path = Path(file).expanduser()
    if served():
        roots = [
            Path(r).expanduser().resolve() for r in os.environ.get(FILES_ROOTS, "").split(os.pathsep) if r
        ]
        if not roots:
            raise IndexRequestError(
                f"IndexRequest.files: {file!r}: this deployment reads no files of its own "
                f"(set {FILES_ROOTS} on the server to the folders it may ingest; send texts or urls)"
            )
        if not path.is_absolute() or not any(path.resolve().is_relative_to(r) for r in roots):
            raise IndexRequestError(
                f"IndexRequest.files: {file!r}: not under the folders this deployment ingests from "
                f"({FILES_ROOTS}); give an absolute path under one of them"
            )
    if not path.exists():
        raise IndexRequestError(f"IndexRequest.files: {file!r}: no such file or folder on the server")


def _unique_texts(texts: list[TextItem]) -> None:
    seen: set[str] = set()
    for i, text in enumerate(texts):
        if text.key in seen:
            raise IndexRequestError(f"IndexRequest.texts[{i}].source: {text.source!r} is given twice")
        seen.add(text.key)


def build() -> StateGraph[IndexState, RagContext, IndexRequest, IndexOutput]:
    """The uncompiled indexing graph."""
    builder = StateGraph(
        IndexState, context_schema=RagContext, input_schema=IndexRequest, output_schema=IndexOutput
    )
    builder.add_node("check", check)
    builder.add_node("delete", delete)
    builder.add_node("relabel", relabel)
    builder.add_node("add", add)
    builder.add_edge(START, "check")
    builder.add_edge("check", "delete")
    builder.add_edge("delete", "relabel")
    builder.add_edge("relabel", "add")
    builder.add_edge("add", END)
    return builder


graph = build().compile(name="index")
"""The compiled indexing graph (``langgraph.json``: ``index``)."""
