"""What every command shares: the Typer app, the consoles, the option types declared once, and
the context, failure and report helpers.

Module level imports only what ``rag-graphs --help`` needs (typer, rich, our small leaf
modules); settings, graphs, models and the store are imported inside the commands.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console

from rag_graphs.support.quiet import show_debug_log
from rag_graphs.support.terminal import safe

if TYPE_CHECKING:
    from rag_graphs.config.context import RagContext

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="The ``rag-graphs`` command: ingest documents, ask a method, run the demo.",
)
console = Console()
err = Console(stderr=True)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        console.print(f"rag-graphs {version('rag-graphs')}", highlight=False)
        raise typer.Exit()


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
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="print the installed version and exit", callback=_print_version, is_eager=True
        ),
    ] = False,
) -> None:
    """Options for every command."""
    if verbose:
        show_debug_log()


StoreOpt = Annotated[
    str | None,
    typer.Option("--store", help="Milvus Lite path (ending in .db) or server URI [env RAG_GRAPHS_STORE_URI]"),
]
CollOpt = Annotated[str | None, typer.Option("--collection", help="collection [env RAG_GRAPHS_COLLECTION]")]
ModelOpt = Annotated[str | None, typer.Option(help="chat model spec [env RAG_GRAPHS_CHAT_MODEL]")]
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

SearchModeOpt = Annotated[
    str | None,
    typer.Option(
        help="auto (graph when the collection has an entity graph, else hybrid) | dense | hybrid "
        "(BM25 + dense) | graph (entity-graph walk) [env RAG_GRAPHS_SEARCH_MODE]"
    ),
]
MaxHopsOpt = Annotated[
    int | None, typer.Option(min=1, help="retrieval rounds of multi-hop methods [env RAG_GRAPHS_MAX_HOPS]")
]
EmbeddingsOpt = Annotated[str | None, typer.Option(help="embedding spec [env RAG_GRAPHS_EMBEDDINGS]")]

SEARCH_OPTIONS: dict[str, Any] = {
    "search_mode": SearchModeOpt,
    "max_hops": MaxHopsOpt,
    "embeddings": EmbeddingsOpt,
    "reranker": RerankOpt,
    "fetch_k": FetchKOpt,
    "search_cache": SearchCacheOpt,
    "search_cache_path": SearchCachePathOpt,
    "search_unit": SearchUnitOpt,
    "expand": ExpandOpt,
    "compress": CompressOpt,
    "web_search": WebSearchOpt,
}
"""The search settings ``ask`` and ``eval`` both take: ``RagContext`` fields of the same names."""


def with_search_options(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` also takes every ``SEARCH_OPTIONS`` option, handed to it as one dict ``search``
    (``RagContext`` overrides, None when not given): declared here once, not in each command."""
    signature = inspect.signature(command, eval_str=True)
    own = [p for p in signature.parameters.values() if p.name != "search"]
    added = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=option)
        for name, option in SEARCH_OPTIONS.items()
    ]

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> None:
        search = {name: kwargs.pop(name, None) for name in SEARCH_OPTIONS}
        command(*args, search=search, **kwargs)

    run.__signature__ = signature.replace(parameters=[*own, *added])  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in [*own, *added]} | {"return": None}
    return run


def _context(store: str | None, collection: str | None, **overrides) -> RagContext:
    from rag_graphs.config.context import RagContext

    values = {k: v for k, v in overrides.items() if v is not None}
    if store:
        values["store_uri"] = store
    if collection:
        values["collection"] = collection
    ctx = RagContext(**values)
    from rag_graphs.store.lite import check_store_path

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
    from rag_graphs.support.redaction import redact

    # Errors can quote a URL with a key in it, and file names (data): each line is made safe.
    lines = redact(message).split("\n")
    err.print("[bold red]error:[/] " + "\n".join(safe(line) for line in lines), soft_wrap=True)
    # Not typer.Exit: that is a RuntimeError, and a command catching RuntimeError around a call
    # that failed here would print a second line, "error: 1". SystemExit is no Exception.
    raise SystemExit(1)


def _eval_store(store: str | None) -> dict[str, Any]:
    """``eval_store=`` when ``--store`` is given; else the evaluator's own default store."""
    return {"eval_store": store} if store else {}


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
    from rag_graphs.llm.models import load_chat_model
    from rag_graphs.search.retrieval import index_for
    from rag_graphs.store import StoreLockedError

    try:
        ctx = _context(store, collection, chat_model=model, max_answer_tokens=max_tokens)
        report = build(
            lambda: index_for(ctx), lambda: load_chat_model(ctx.chat_model, max_tokens=ctx.max_answer_tokens)
        )
    except (ValueError, ImportError, StoreLockedError, RuntimeError) as exc:
        _fail(str(exc))
    _print_summary(report.summary())
