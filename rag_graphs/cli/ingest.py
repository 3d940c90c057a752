"""``rag-graphs ingest`` and ``rag-graphs sources``: fill the store, list what it holds."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from rag_graphs.cli.shared import (
    CollOpt,
    StoreOpt,
    TagOpt,
    TenantOpt,
    _build_over,
    _context,
    _fail,
    _print_summary,
    app,
    console,
)
from rag_graphs.search.sources import delete_sources
from rag_graphs.support.terminal import safe

if TYPE_CHECKING:
    from rag_graphs.config.context import RagContext
    from rag_graphs.ingestion.convert.captioning import CaptionPrompt
    from rag_graphs.store import ChunkIndex


@app.command()
def ingest(
    paths: Annotated[
        list[str] | None,
        typer.Argument(help="files or folders (folders recurse), or http(s):// URLs (fetched, SSRF-guarded)"),
    ] = None,
    store: StoreOpt = None,
    collection: CollOpt = None,
    exclude: Annotated[list[str] | None, typer.Option(help="glob of files to skip (repeatable)")] = None,
    include: Annotated[
        list[str] | None, typer.Option(help="glob of the only files to take, e.g. '*.pdf' (repeatable)")
    ] = None,
    dense_only: Annotated[bool, typer.Option(help="create the collection without BM25")] = False,
    follow_links: Annotated[
        bool,
        typer.Option(help="follow symlinks out of the folder or glob root, and links to folders"),
    ] = False,
    delete: Annotated[
        list[Path] | None,
        typer.Option("--delete", help="remove a source (file, or every file under a folder) from the store"),
    ] = None,
    captioner: Annotated[
        str,
        typer.Option(
            help="who describes pictures: fallback (caption + nearby text), tesseract, "
            "api:<url>#<model>, or a vision chat model spec such as ollama:granite3.2-vision"
        ),
    ] = "fallback",
    caption_prompt: Annotated[
        str, typer.Option(help="picture prompt: describe, extract_text or chart")
    ] = "describe",
    allow_fetch: Annotated[
        bool,
        typer.Option(
            help="let HTML/Markdown fetch the remote and local images they reference, and URL sources "
            "reach loopback or private addresses"
        ),
    ] = False,
    max_file_mb: Annotated[float, typer.Option(help="refuse files larger than this")] = 100.0,
    timeout: Annotated[
        float, typer.Option(help="seconds one file may take to convert (0: no limit, in process)")
    ] = 300.0,
    docling_serve: Annotated[
        str | None, typer.Option(help="convert with this Docling Serve instance (URL) instead of in process")
    ] = None,
    tenant: TenantOpt = None,
    tag: TagOpt = None,
    entities: Annotated[
        str | None,
        typer.Option(
            help="who finds each chunk's entities for graph search: spacy (offline NER, the default) "
            "or spacy:<pipeline>"
        ),
    ] = None,
    graph: Annotated[
        bool,
        typer.Option(
            "--graph/--no-graph",
            help="build the entity graph that graph search (the default search_mode=auto) walks; "
            "a collection stored without one stays without (`rag-graphs graph build` adds it), "
            "one that has it keeps it current",
        ),
    ] = True,
    children: Annotated[
        bool,
        typer.Option(
            "--children",
            help="also store each chunk's sentences for small-to-big search (--search-unit sentence)",
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="convert every file again, also those unchanged since they were stored (skipped otherwise)",
        ),
    ] = False,
) -> None:
    """Convert files with Docling, chunk, embed and store them in Milvus.

    Unchanged files (same bytes, same chunk settings) are skipped before conversion;
    a changed file (or new --tenant/--tag labels) replaces its old chunks.
    `ask --tenant/--tag/--source` searches only what carries those labels.
    Without --tenant/--tag, RAG_GRAPHS_TENANT/RAG_GRAPHS_TAGS label the chunks.
    """
    from rag_graphs.ingestion import IngestOptions
    from rag_graphs.ingestion import ingest as run_ingest
    from rag_graphs.ingestion.options import megabytes
    from rag_graphs.search.retrieval import embeddings_for
    from rag_graphs.store import StoreLockedError, open_index
    from rag_graphs.store.sentences import build_sentences

    if not paths and not delete:
        _fail("give files or folders to ingest, or --delete PATH")
    ctx = _context(store, collection)
    if not isinstance(ctx.embeddings, str):  # pragma: no cover - env gives strings
        _fail("embeddings must be a spec string on the command line")
    if delete:
        from rag_graphs.search.retrieval import index_for

        try:
            removed = delete_sources(index_for(ctx), delete)
        except (StoreLockedError, ValueError) as exc:
            _fail(str(exc))
        for gone in removed:
            console.print(
                f"removed {gone.chunks} chunks of {len(gone.sources)} source(s) under {safe(gone.target)}"
            )
        if not paths:
            return
    try:
        options = IngestOptions(
            exclude=exclude or (),
            include=include or (),
            follow_links=follow_links,
            captioner=captioner,
            caption_prompt=cast("CaptionPrompt", caption_prompt),  # checked by the captioner
            allow_fetch=allow_fetch,
            max_file_bytes=megabytes(max_file_mb),
            docling_serve=docling_serve,
            timeout=timeout or None,
            tenant=ctx.tenant if tenant is None else tenant,  # RAG_GRAPHS_TENANT/_TAGS, as `ask` reads them
            tags=ctx.tags if tag is None else tag,
            entities=(entities or "auto") if graph else None,
            force=force,
        )
        where: RagContext | ChunkIndex = ctx
        if dense_only:  # a new collection without BM25 (ingest opens a context's with it)
            where = open_index(ctx.store_uri, ctx.collection, embeddings_for(ctx), hybrid=False)
        report = run_ingest(paths or [], index=where, options=options)
    except (FileNotFoundError, StoreLockedError, ValueError, ImportError, RuntimeError) as exc:
        _fail(str(exc))
    _print_summary(report.summary())
    if children:
        _build_over(store, collection, None, lambda index, chat: build_sentences(index()))
    if report.failed and not report.ok:
        raise typer.Exit(1)


@app.command()
def sources(store: StoreOpt = None, collection: CollOpt = None) -> None:
    """List the indexed sources with their chunk counts per kind."""
    from rich.table import Table

    from rag_graphs.store import StoreLockedError, open_index
    from rag_graphs.store.embeddings import DeferredEmbeddings
    from rag_graphs.support.redaction import redact_url

    ctx = _context(store, collection)
    if not isinstance(ctx.embeddings, str):  # pragma: no cover - env gives strings
        _fail("embeddings must be a spec string on the command line")
    try:  # listing embeds nothing: the model is never loaded
        indexed = open_index(ctx.store_uri, ctx.collection, DeferredEmbeddings(ctx.embeddings)).sources()
    except (StoreLockedError, ValueError) as exc:
        _fail(str(exc))
    if not indexed:
        console.print(
            f"collection {safe(repr(ctx.collection))} at {safe(redact_url(ctx.store_uri))} holds no chunks"
        )
        return
    import os

    kinds = ("text", "table", "picture")
    local = [s for s in indexed if os.path.isabs(s)]
    root = os.path.commonpath([os.path.dirname(s) for s in local]) if local else ""
    title = f"{safe(ctx.collection)} in {safe(redact_url(ctx.store_uri))}" + (
        f"\nsources under {safe(root)}" if root else ""
    )
    table = Table("source", *kinds, "total", title=title)
    for source, counts in indexed.items():
        shown = os.path.relpath(source, root) if root and source in local else source
        table.add_row(safe(shown), *(str(counts.get(k, 0)) for k in kinds), str(sum(counts.values())))
    console.print(table)
