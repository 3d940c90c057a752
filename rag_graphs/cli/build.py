"""``rag-graphs sentences|raptor|graph build``: what search builds over an ingested collection."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from rag_graphs.cli.shared import (
    CollOpt,
    StoreOpt,
    _build_over,
    app,
)

if TYPE_CHECKING:
    pass


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
    from rag_graphs.store.sentences import build_sentences

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
    from rag_graphs.ingestion.raptor import build_tree

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
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="also re-record chunks whose entity rows are missing (a store an older version "
            "damaged); reads every chunk, so it takes minutes on a big store",
        ),
    ] = False,
) -> None:
    """Give a collection's chunks their entities (for one ingested before graphs existed);
    re-running resumes where it stopped."""
    from rag_graphs.entity_graph.build import build_graph
    from rag_graphs.entity_graph.entities import load_extractor

    def build(index: Callable, chat: Callable) -> Any:  # a GraphBuildReport
        find = load_extractor(
            extractor, chat_model=chat() if extractor == "llm" else None
        )  # before the store
        return build_graph(index(), find, repair=repair)

    _build_over(store, collection, model, build)


@graph_app.command("communities")
def graph_communities(
    store: StoreOpt = None,
    collection: CollOpt = None,
    model: Annotated[
        str | None, typer.Option("--model", "--chat-model", help="chat model spec that writes the reports")
    ] = None,
    max_cluster_size: Annotated[
        int, typer.Option(min=2, help="entities a community may hold before Leiden splits it")
    ] = 10,  # entity_graph.communities.MAX_CLUSTER_SIZE
    min_chunks: Annotated[
        int, typer.Option(min=1, help="no report on communities of fewer chunks (fewer model calls)")
    ] = 1,
    report_chars: Annotated[
        int, typer.Option(min=500, help="text one report reads (passages or sub-reports)")
    ] = 6000,  # ingestion.community_reports.MAX_REPORT_CHARS
) -> None:
    """Find the entity graph's communities (hierarchical Leiden, per tenant and tag set) and write
    a report on each for the graphrag method; re-running resumes, writing only missing reports."""
    from rag_graphs.ingestion.community_reports import build_reports

    _build_over(
        store,
        collection,
        model,
        lambda index, chat: build_reports(
            index(),
            chat(),
            max_cluster_size=max_cluster_size,
            min_chunks=min_chunks,
            max_chars=report_chars,
        ),
    )
