"""``rag-graphs methods`` and ``rag-graphs demo``."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from rag_graphs.cli.ask import _run
from rag_graphs.cli.ingest import ingest
from rag_graphs.cli.shared import (
    CollOpt,
    StoreOpt,
    _build_over,
    _context,
    app,
    console,
)

if TYPE_CHECKING:
    pass


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
    """Ingest the bundled corpus and run every method on a four-file and a two-file multi-hop
    question: what each searched, which of the chain's files it retrieved, its answer and the
    evidence sentence it stands on, whether it is the gold."""
    import time
    from dataclasses import replace

    import rag_graphs.cli.demo as shown
    from rag_graphs.catalog import METHODS

    derived = shown.derived_steps(METHODS)  # what the methods declare they need (catalog.REQUIRES)
    steps = shown.Steps(console, total=4 + len(derived))
    corpus = Path(str(resources.files("rag_graphs").joinpath("demo_corpus")))
    ctx = _context(store, collection, max_answer_tokens=shown.ANSWER_TOKENS)
    console.print(shown.search_banner(ctx.search_mode), highlight=False)
    with steps.step(f"ingest {corpus}, with its entity graph", shown.STEP_ESTIMATES["ingest"]):
        ingest([str(corpus)], store=store, collection=collection, exclude=None, dense_only=False)
        # a store ingested before ingest built graphs gets its graph here (a no-op once built)
        _build_over(store, collection, None, shown.build_entity_graph)
    for title, estimate, build in derived:
        with steps.step(title, estimate):
            _build_over(store, collection, None, build, max_tokens=shown.ANSWER_TOKENS)
    console.print(f"search: {shown.search_used(ctx)}", highlight=False)
    console.print(shown.reader_banner(ctx), highlight=False)
    for question, title, estimate in (
        (shown.FOUR_HOP, "four-hop question", shown.STEP_ESTIMATES["methods"]),
        (shown.TWO_HOP, "two-hop question", shown.STEP_ESTIMATES["two_hop"]),
    ):
        rows = []
        with steps.step(f"{len(METHODS)} methods, the {title}", estimate):
            for number, method in enumerate(METHODS, start=1):
                console.print(f"[dim]  {number}/{len(METHODS)} {method}[/]")
                began = time.monotonic()
                out = _run(method, question.text, ctx, as_json=None)
                rows.append(shown.method_row(method, out, time.monotonic() - began, question))
        console.rule(f"[bold]{question.text}[/] (gold: {question.gold})")
        for row in rows:
            console.print("\n".join(shown.method_lines(row)), highlight=False)
        console.print(shown.summary_line(rows, question))
        console.print(shown.reach_note(rows, question))
    with steps.step(f"graphrag global search: {shown.GLOBAL_QUESTION}", "20 s"):
        began = time.monotonic()
        out = _run("graphrag", shown.GLOBAL_QUESTION, replace(ctx, graphrag_search="global"), as_json=None)
    console.print("\n".join(shown.global_lines(out, time.monotonic() - began)), highlight=False)
    console.print(shown.SMALL_MODEL_NOTE)
    console.print(f"[dim]demo finished in {steps.elapsed():.0f} s[/]")
