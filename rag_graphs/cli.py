"""The ``rag-graphs`` command: ingest documents, ask a method, run the demo."""

# Module level imports only what ``rag-graphs --help`` needs (typer, rich, our small leaf
# modules); settings, graphs, models and the store are imported inside the commands.

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console

from ingestion.quiet import show_debug_log
from ingestion.terminal import safe
from rag_graphs.sources import delete_sources, source_key
from rag_graphs.threads import DEFAULT_CHECKPOINTS

if TYPE_CHECKING:
    from rag_graphs.context import RagContext
    from rag_graphs.run import Progress, RunEvent

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
console = Console()
err = Console(stderr=True)


@app.callback()
def _options(
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="show third-party messages (Milvus Lite, gRPC) and the debug log [env RAG_GRAPHS_VERBOSE]",
        ),
    ] = False,
) -> None:
    """Options for every command."""
    if verbose:
        show_debug_log()


StoreOpt = Annotated[
    str | None, typer.Option("--store", help="Milvus Lite path or server URI [env RAG_GRAPHS_STORE_URI]")
]
CollOpt = Annotated[str | None, typer.Option("--collection", help="collection [env RAG_GRAPHS_COLLECTION]")]
TenantOpt = Annotated[str | None, typer.Option(help="access label: the tenant chunks belong to")]
TagOpt = Annotated[list[str] | None, typer.Option("--tag", help="access label (repeatable)")]
RerankOpt = Annotated[
    str | None,
    typer.Option(help="reranker: none | mmr | llm | cross-encoder:<local dir> [env RAG_GRAPHS_RERANKER]"),
]
FetchKOpt = Annotated[
    int | None, typer.Option(help="candidates per search a reranker keeps k of [env RAG_GRAPHS_FETCH_K]")
]
SearchCacheOpt = Annotated[
    int | None,
    typer.Option(help="entries of the cross-question search cache, 0 = off [env RAG_GRAPHS_SEARCH_CACHE]"),
]
SearchCachePathOpt = Annotated[
    str | None,
    typer.Option(help="SQLite file of the persistent search cache [env RAG_GRAPHS_SEARCH_CACHE_PATH]"),
]
SearchUnitOpt = Annotated[
    str | None,
    typer.Option(help="what search matches: chunk | sentence (small-to-big) [env RAG_GRAPHS_SEARCH_UNIT]"),
]
ExpandOpt = Annotated[
    str | None,
    typer.Option(help="expansion of hits: none | neighbours:<N> | section [env RAG_GRAPHS_EXPAND]"),
]
CompressOpt = Annotated[
    str | None,
    typer.Option(
        help="compression of hits, comma-chained: none | embeddings:<t> | redundant:<t> | llm"
        " [env RAG_GRAPHS_COMPRESS]"
    ),
]
WebSearchOpt = Annotated[
    str | None,
    typer.Option(
        help="web search (crag, react): none|duckduckgo|tavily|searxng:<url> [env RAG_GRAPHS_WEB_SEARCH]"
    ),
]


def _context(store: str | None, collection: str | None, **overrides) -> RagContext:
    from rag_graphs.context import RagContext

    values = {k: v for k, v in overrides.items() if v is not None}
    if store:
        values["store_uri"] = store
    if collection:
        values["collection"] = collection
    ctx = RagContext(**values)
    from ingestion.store import check_store_path

    try:
        check_store_path(ctx.store_uri)  # a file or unwritable path: one clear error, before any work
    except ValueError as exc:
        _fail(str(exc))
    return ctx


def _print_summary(text: str) -> None:
    """A report summary as written: never wrapped at the terminal width (a line broken inside
    "2 table chunks" misleads a reader and any grep), and file names are not read as markup."""
    console.print(text, soft_wrap=True, markup=False, highlight=False)


def _fail(message: str) -> NoReturn:
    from rag_graphs.tracing import redact

    # Errors can quote a URL with a key in it, and file names (data): each line is made safe.
    lines = redact(message).split("\n")
    err.print("[bold red]error:[/] " + "\n".join(safe(line) for line in lines))
    raise typer.Exit(1)


def _eval_store(store: str | None) -> dict[str, Any]:
    """``eval_store=`` when ``--store`` is given; else the evaluator's own default store."""
    return {"eval_store": store} if store else {}


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
            help="find each chunk's entities for graph search (-m hipporag, --search-mode graph): "
            "spacy (offline NER) or spacy:<pipeline>; a collection with a graph keeps it current anyway"
        ),
    ] = None,
    children: Annotated[
        bool,
        typer.Option(
            "--children",
            help="also store each chunk's sentences for small-to-big search (--search-unit sentence)",
        ),
    ] = False,
) -> None:
    """Convert files with Docling, chunk, embed and store them in Milvus.

    Unchanged files add nothing; a changed file (or new --tenant/--tag labels)
    replaces its old chunks. `ask --tenant/--tag/--source` searches only what
    carries those labels.
    """
    from ingestion import StoreLockedError
    from ingestion import ingest as run_ingest
    from ingestion.options import megabytes
    from ingestion.sentences import build_sentences

    if not paths and not delete:
        _fail("give files or folders to ingest, or --delete PATH")
    ctx = _context(store, collection)
    if not isinstance(ctx.embeddings, str):  # pragma: no cover - env gives strings
        _fail("embeddings must be a spec string on the command line")
    if delete:
        from rag_graphs.retrieval import index_for

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
        report = run_ingest(
            paths or [],
            uri=ctx.store_uri,
            collection=ctx.collection,
            embeddings=ctx.embeddings,
            hybrid=not dense_only,
            exclude=exclude or (),
            include=include or (),
            follow_links=follow_links,
            captioner=captioner,
            caption_prompt=caption_prompt,
            allow_fetch=allow_fetch,
            max_file_bytes=megabytes(max_file_mb),
            docling_serve=docling_serve,
            timeout=timeout or None,
            tenant=tenant,
            tags=tag or (),
            entities=entities,
        )
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

    from ingestion import StoreLockedError
    from ingestion.captioning import redact_url
    from rag_graphs.retrieval import index_for

    ctx = _context(store, collection)
    try:
        indexed = index_for(ctx).sources()
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


def _step_line(number: int, step: dict) -> str:
    detail = step.get("query", "") if step["kind"] in ("retrieve", "rewrite") else step.get("text", "")
    found = f" -> {len(step['doc_ids'])} passages" if step["kind"] == "retrieve" and "doc_ids" in step else ""
    shown = safe(str(detail)[:160].replace("\n", " "))
    return f"{number}. [cyan]{safe(step['node'])}[/] {safe(step['kind'])}: {shown}{found}"


def _print_result(result: dict) -> None:
    console.rule("[bold]answer")
    console.print(safe(result.get("answer", "")), highlight=False)
    console.print("[bold]citations[/]")
    for c in result.get("citations", []):
        where = safe(
            " · ".join(
                [
                    Path(c["source"]).name,
                    c["kind"],
                    *([f"p. {c['page']}"] if c["page"] >= 0 else []),
                    c["cref"],
                ]
            )
        )
        quote = c["quote"].replace("\n", " ")
        mark = "" if c["explicit"] else "*"
        shown = safe(quote[:70]) + ("…" if len(quote) > 70 else "")
        console.print(f"  \\[{c['marker']}]{mark} {where}\n      [dim]{shown}[/]", highlight=False)
    if any(not c["explicit"] for c in result.get("citations", [])):
        console.print("[dim]* the model wrote no citation marker; the passages it was given are listed[/]")
    console.rule("[bold]steps")
    for i, step in enumerate(result.get("steps", []), start=1):
        console.print(_step_line(i, step), highlight=False)
    console.print(_outcome_line(result), highlight=False)
    console.print(f"[dim]usage: {json.dumps(result.get('usage', {}))}[/]")


def _outcome_line(result: dict) -> str:
    """How the run ended (``outcome``, ``stop_reason``, Self-RAG's ``confidence``), red unless answered."""
    outcome = result.get("outcome") or "unknown"
    parts = [f"outcome: {outcome}"]
    if result.get("stop_reason"):
        parts.append(f"stop reason: {safe(result['stop_reason'])}")
    if result.get("confidence"):
        parts.append(f"confidence: {safe(result['confidence'])}")
    colour = "green" if outcome == "answered" else "red"
    return f"[{colour}]{' · '.join(parts)}[/]"


def _event_line(event: Progress) -> str:
    details = " ".join(f"{k}={str(v)[:80]!r}" for k, v in event.details.items())
    return f"   [dim]· {safe(event.node)} {safe(event.event)} {safe(details)}[/]"


def _run(
    method: str,
    question: str,
    ctx: RagContext,
    as_json: bool | None,
    *,
    live: bool = False,
    thread: tuple[str, Path] | None = None,
) -> dict:
    """Run one method (``rag_graphs.run.stream``) with a live status line; print the result unless
    ``as_json`` is None.

    With ``live``, every node event and every reasoning step is printed the moment
    it happens, not only at the end. With ``thread`` (thread id, SQLite file), every
    step is checkpointed: a run of that thread that was killed or failed continues
    from its last completed step.
    """
    from rag_graphs.run import stream

    thread_id, checkpoints = thread or (None, DEFAULT_CHECKPOINTS)
    events = stream(method, question, ctx, thread_id=thread_id, checkpoints=checkpoints)
    result = _follow(events, method, live, notices=err if as_json else console)
    if as_json:
        payload = {k: v for k, v in result.items() if k != "documents"}
        typer.echo(json.dumps(payload, indent=2, default=str))
    elif as_json is False:
        _print_result(result)
    return result


def _follow(events: Iterable[RunEvent], method: str, live: bool, notices: Console) -> dict:
    """Show a run's events (status line; with ``live``, every event and step); its result.

    ``notices`` (resuming a thread) go to stderr under ``--json``, so stdout stays one JSON document.
    """
    from rag_graphs.run import Finished, Progress, Resumed, Step

    result: dict = {}
    with console.status(f"[bold]{safe(method)}[/] thinking...") as status:
        for event in events:
            if isinstance(event, Resumed):
                thread = safe(repr(event.thread_id))
                notices.print(
                    f"[dim]thread {thread} finished earlier; its result:[/]"
                    if event.finished
                    else f"[dim]resuming thread {thread} at {safe(', '.join(event.next))}[/]"
                )
            elif isinstance(event, Progress):
                status.update(f"[bold]{safe(method)}[/] {safe(event.node)}: {safe(event.event)}")
                if live:
                    console.print(_event_line(event), highlight=False)
            elif isinstance(event, Step) and live:
                console.print(_step_line(event.number, event.step), highlight=False)
            elif isinstance(event, Finished):
                result = event.result
    return result


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="the question")],
    method: Annotated[
        str, typer.Option("--method", "-m", help="method (see `rag-graphs methods`)")
    ] = "naive",
    store: StoreOpt = None,
    collection: CollOpt = None,
    k: Annotated[int | None, typer.Option(help="chunks per retrieval [env RAG_GRAPHS_K]")] = None,
    model: Annotated[str | None, typer.Option(help="chat model spec [env RAG_GRAPHS_CHAT_MODEL]")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
    stream: Annotated[bool, typer.Option("--stream", help="print each step live as the graph runs")] = False,
    tenant: Annotated[str | None, typer.Option(help="search only chunks of this tenant")] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="search only chunks with a tag (repeatable)")
    ] = None,
    source: Annotated[
        list[str] | None, typer.Option("--source", help="search only this source (repeatable)")
    ] = None,
    thread_id: Annotated[
        str | None,
        typer.Option(help="checkpoint every step under this id; re-run to continue a killed or failed run"),
    ] = None,
    checkpoints: Annotated[
        Path, typer.Option(help="SQLite file of --thread-id checkpoints")
    ] = DEFAULT_CHECKPOINTS,
    reranker: RerankOpt = None,
    fetch_k: FetchKOpt = None,
    search_cache: SearchCacheOpt = None,
    search_cache_path: SearchCachePathOpt = None,
    search_unit: SearchUnitOpt = None,
    expand: ExpandOpt = None,
    compress: CompressOpt = None,
    web_search: WebSearchOpt = None,
) -> None:
    """Answer a question with one method; print the answer, citations and steps."""
    from ingestion import StoreLockedError
    from rag_graphs.faults import RunFailed

    if not question.strip():
        _fail("the question is empty: ask something, e.g. rag-graphs ask 'Where was Ilsa Brandt born?'")
    try:
        sources = [source_key(s) for s in source or []]
        ctx = _context(
            store,
            collection,
            k=k,
            chat_model=model,
            tenant=tenant,
            tags=tag or None,
            sources=sources or None,
            reranker=reranker,
            fetch_k=fetch_k,
            search_cache=search_cache,
            search_cache_path=search_cache_path,
            search_unit=search_unit,
            expand=expand,
            compress=compress,
            web_search=web_search,
        )
        thread = (thread_id, checkpoints) if thread_id else None
        _run(method, question, ctx, as_json, live=stream and not as_json, thread=thread)
    except RunFailed as exc:
        if as_json:
            typer.echo(json.dumps({k: v for k, v in exc.result.items() if k != "documents"}, default=str))
        else:
            console.rule("[bold red]steps until the failure")
            for i, step in enumerate(exc.result["steps"], start=1):
                console.print(_step_line(i, step), highlight=False)
        _fail(
            str(exc)
            + (f"\nre-run with --thread-id {thread_id} to continue from the failed step" if thread_id else "")
        )
    except (ValueError, StoreLockedError, RuntimeError, FileNotFoundError) as exc:
        _fail(str(exc))


@app.command("eval")
def eval_command(
    dataset: Annotated[
        Path | None,
        typer.Option(help="a folder in the ../shared/eval layout, or a JSONL of question/answer rows"),
    ] = None,
    methods: Annotated[
        str | None,
        typer.Option(
            "--methods", "-m", help="comma-separated methods, or 'all' [default: naive; --resume: the run's]"
        ),
    ] = None,
    setting: Annotated[
        str, typer.Option(help="open (search the whole corpus) | distractor | oracle (gold passages only)")
    ] = "open",
    limit: Annotated[int | None, typer.Option(help="the first N questions")] = None,
    sample: Annotated[int | None, typer.Option(help="a seeded random sample of N questions")] = None,
    seed: Annotated[int, typer.Option(help="seed of --sample")] = 0,
    model: Annotated[str | None, typer.Option(help="chat model spec [env RAG_GRAPHS_CHAT_MODEL]")] = None,
    embeddings: Annotated[str | None, typer.Option(help="embedding spec [env RAG_GRAPHS_EMBEDDINGS]")] = None,
    k: Annotated[
        int | None,
        typer.Option(min=1, help="context size: chunks per retrieval (R@5 needs k >= 5) [env RAG_GRAPHS_K]"),
    ] = None,
    retrieval_only: Annotated[
        bool,
        typer.Option(
            "--retrieval-only",
            help="stop each run before its answer: passage recall and R@2/R@5 only, no answer call",
        ),
    ] = False,
    concurrency: Annotated[int, typer.Option(help="questions run in parallel")] = 1,
    out: Annotated[Path, typer.Option(help="folder for new run directories")] = Path("runs"),
    resume: Annotated[Path | None, typer.Option(help="a run directory to continue")] = None,
    report: Annotated[
        Path | None, typer.Option(help="re-render the report of a run directory and exit")
    ] = None,
    store: StoreOpt = None,
    collection: CollOpt = None,
    reranker: RerankOpt = None,
    fetch_k: FetchKOpt = None,
    search_cache: SearchCacheOpt = None,
    search_cache_path: SearchCachePathOpt = None,
    search_unit: SearchUnitOpt = None,
    expand: ExpandOpt = None,
    compress: CompressOpt = None,
    web_search: WebSearchOpt = None,
) -> None:
    """Compare methods on a QA set: EM/F1, passage recall and R@2/R@5, LLM calls, tokens, seconds;
    table and plots. With --retrieval-only, retrieval alone, fast enough for hundreds of questions."""
    from rag_graphs.eval import evaluate, markdown_table, read_rows, summarize, write_report
    from rag_graphs.eval.runner import CONFIG, read_config
    from rag_graphs.methods import METHODS

    try:
        if report is None:
            if resume is not None and (dataset is None or (resume / CONFIG).is_file()):
                # A resumed run keeps its dataset, context size and mode unless told otherwise.
                stored = read_config(resume)
                dataset = dataset or Path(stored["dataset"])
                k = k if k is not None else stored.get("k")
                retrieval_only = retrieval_only or bool(stored.get("retrieval_only"))
                methods = methods or ",".join(stored.get("methods") or ["naive"])  # every method of the run
            methods = methods or "naive"
            if dataset is None:
                _fail("--dataset is required (or --resume RUN_DIR, or --report RUN_DIR)")
            chosen = (
                list(METHODS)
                if methods.strip() == "all"
                else [m.strip() for m in methods.split(",") if m.strip()]
            )
            ctx = _context(
                store,
                collection,
                k=k,
                chat_model=model,
                embeddings=embeddings,
                reranker=reranker,
                fetch_k=fetch_k,
                search_cache=search_cache,
                search_cache_path=search_cache_path,
                search_unit=search_unit,
                expand=expand,
                compress=compress,
                web_search=web_search,
            )
            report = evaluate(
                dataset,
                chosen,
                context=ctx,
                setting=setting,  # type: ignore[arg-type]
                limit=limit,
                sample=sample,
                seed=seed,
                concurrency=concurrency,
                run_dir=resume,
                runs_root=out,
                retrieval_only=retrieval_only,
                **_eval_store(store),
            )
        path = write_report(report)
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        _fail(str(exc))
    console.print(markdown_table(summarize(read_rows(report))), highlight=False, soft_wrap=True)
    console.print(f"[bold]report[/]: {safe(path)}  (plots beside it)")


def _build_over(
    store: str | None,
    collection: str | None,
    model: str | None,
    build: Callable,
    max_tokens: int | None = None,
) -> None:
    """Run ``build(index, chat)`` on the collection the options name and print its report's summary.

    ``index()`` opens the collection and ``chat()`` loads the chat model, each only when the build
    asks, so a build can check its own settings before the store opens. ``max_tokens`` caps each
    reply (the demo's short summaries); by default, the context's answer budget.
    """
    from ingestion import StoreLockedError
    from rag_graphs.models import load_chat_model
    from rag_graphs.retrieval import index_for

    try:
        ctx = _context(store, collection, chat_model=model, max_answer_tokens=max_tokens)
        report = build(
            lambda: index_for(ctx), lambda: load_chat_model(ctx.chat_model, max_tokens=ctx.max_answer_tokens)
        )
    except (ValueError, ImportError, StoreLockedError, RuntimeError) as exc:
        _fail(str(exc))
    _print_summary(report.summary())


raptor_app = typer.Typer(no_args_is_help=True, help="RAPTOR summary trees.")
graph_app = typer.Typer(no_args_is_help=True, help="The entity graph behind graph search (hipporag).")
sentences_app = typer.Typer(no_args_is_help=True, help="Sentence rows for small-to-big search.")
app.add_typer(sentences_app, name="sentences")
app.add_typer(raptor_app, name="raptor")
app.add_typer(graph_app, name="graph")


@sentences_app.command("build")
def sentences_build(store: StoreOpt = None, collection: CollOpt = None) -> None:
    """Store every chunk's sentences in `<collection>_sentences` for `--search-unit sentence`
    (small-to-big); re-running resumes, never embeds a stored sentence again."""
    from ingestion.sentences import build_sentences

    _build_over(store, collection, None, lambda index, chat: build_sentences(index()))


@raptor_app.command("build")
def raptor_build(
    store: StoreOpt = None,
    collection: CollOpt = None,
    model: Annotated[str | None, typer.Option(help="chat model spec that writes summaries")] = None,
    max_levels: Annotated[int, typer.Option(help="summary levels at most")] = 3,
    cluster_chars: Annotated[
        int, typer.Option(min=500, help="text one summary reads; bigger clusters are split")
    ] = 6000,  # ingestion.raptor.MAX_CLUSTER_CHARS
) -> None:
    """Build (or finish) the RAPTOR tree of a collection; re-running resumes, never re-summarises."""
    from ingestion.raptor import build_tree

    _build_over(
        store,
        collection,
        model,
        lambda index, chat: build_tree(index(), chat(), max_levels=max_levels, cluster_chars=cluster_chars),
    )


@graph_app.command("build")
def graph_build(
    extractor: Annotated[
        str, typer.Option(help="who finds entities: spacy (offline NER), spacy:<pipeline>, or llm")
    ] = "spacy",
    store: StoreOpt = None,
    collection: CollOpt = None,
    model: Annotated[str | None, typer.Option(help="chat model spec for --extractor llm")] = None,
) -> None:
    """Give a collection's chunks their entities (for one ingested before graphs existed);
    re-running resumes where it stopped."""
    from ingestion.entities import load_extractor
    from ingestion.graph import build_graph

    def build(index: Callable, chat: Callable) -> Any:  # a GraphBuildReport
        find = load_extractor(
            extractor, chat_model=chat() if extractor == "llm" else None
        )  # before the store
        return build_graph(index(), find)

    _build_over(store, collection, model, build)


@app.command("mine-demos")
def mine_demos(
    dataset: Annotated[Path, typer.Option(help="a labelled set (../shared/eval layout or JSONL)")],
    out: Annotated[Path, typer.Option(help="the demonstrations JSONL to write")] = Path(
        "demonstrations.jsonl"
    ),
    offset: Annotated[int, typer.Option(help="skip this many questions (keep your eval sample out)")] = 100,
    limit: Annotated[int, typer.Option(help="candidate questions to try")] = 50,
    keep: Annotated[int, typer.Option(help="demonstrations to keep")] = 8,
    model: Annotated[str | None, typer.Option(help="chat model spec [env RAG_GRAPHS_CHAT_MODEL]")] = None,
    store: StoreOpt = None,
    require: Annotated[
        str,
        typer.Option(
            help="keep a question when the model's answer contains the gold (answer), or when its "
            "documents hold every gold passage (evidence: for models too small to answer)"
        ),
    ] = "answer",
    chains: Annotated[
        bool, typer.Option(help="keep only questions with a gold decomposition (IterDRAG chains, MuSiQue)")
    ] = False,
) -> None:
    """Mine DRAG/IterDRAG demonstrations: questions the run gets right, with their documents
    (and, where the set has a gold decomposition, IterDRAG's follow-up chain)."""
    from rag_graphs.eval.mining import mine_demonstrations

    try:
        ctx = _context(None, None, chat_model=model)
        kept = mine_demonstrations(
            dataset,
            out,
            context=ctx,
            offset=offset,
            limit=limit,
            keep=keep,
            require=require,  # type: ignore[arg-type]  # checked by mine_demonstrations
            chains=chains,
            **_eval_store(store),
        )
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        _fail(str(exc))
    console.print(
        f"kept {kept} demonstrations in {safe(out)}; use them with RAG_GRAPHS_DEMONSTRATIONS={safe(out)}"
    )


@app.command()
def methods() -> None:
    """List the methods with a one-line description each."""
    from rich.table import Table

    from rag_graphs.catalog import METHODS  # the names alone: no graph is compiled to list them

    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()  # descriptions wrap inside their column on narrow terminals
    for name, description in METHODS.items():
        table.add_row(name, description)
    console.print(table)


@app.command()
def demo(
    store: StoreOpt = None,
    collection: CollOpt = None,
) -> None:
    """Ingest the bundled corpus and run every method on a four-file multi-hop question: what each
    searched, which of the chain's files it retrieved, whether its answer holds the gold."""
    import time

    from rag_graphs import demo as shown
    from rag_graphs.methods import METHODS

    steps = shown.Steps(console, total=3)
    corpus = Path(str(resources.files("rag_graphs").joinpath("demo_corpus")))
    with steps.step(f"ingest {corpus}", shown.STEP_ESTIMATES["ingest"]):
        ingest([str(corpus)], store=store, collection=collection, exclude=None, dense_only=False)
    with steps.step("RAPTOR summary tree", shown.STEP_ESTIMATES["raptor"]):
        _build_over(store, collection, None, shown.build_raptor_tree, max_tokens=shown.ANSWER_TOKENS)
    ctx = _context(store, collection, max_answer_tokens=shown.ANSWER_TOKENS)
    rows = []
    with steps.step(f"{len(METHODS)} methods, one question", shown.STEP_ESTIMATES["methods"]):
        for number, method in enumerate(METHODS, start=1):
            console.print(f"[dim]  {number}/{len(METHODS)} {method}[/]")
            began = time.monotonic()
            out = _run(method, shown.QUESTION, ctx, as_json=None)
            rows.append(shown.method_row(method, out, time.monotonic() - began))
    console.rule(f"[bold]{shown.QUESTION}[/] (gold: {shown.GOLD})")
    for row in rows:
        console.print("\n".join(shown.method_lines(row)), highlight=False)
    console.print(shown.summary_line(rows))
    console.print(shown.SMALL_MODEL_NOTE)
    console.print(f"[dim]demo finished in {steps.elapsed():.0f} s[/]")


def main() -> None:  # pragma: no cover
    app(sys.argv[1:])


if __name__ == "__main__":  # pragma: no cover
    main()
