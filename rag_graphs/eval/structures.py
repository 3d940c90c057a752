"""What an evaluation builds before its first run: the derived structures (``catalog.STRUCTURES``)
its methods declare they need (``catalog.REQUIRES``) and its search settings use, over the store the
run searches. Every build resumes, so one that is complete costs a read and no model call.

Community reports cost one LLM call per community: the number is read first (``plan_reports``,
no model call) and printed, and a build above ``EvalOptions.max_report_calls`` is refused with the
flag that raises it and the command that builds them beforehand. A run on the user's own retriever
has no store to build in: a method needing a structure is refused before any run."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from rag_graphs.catalog import REQUIRES, STRUCTURES, required
from rag_graphs.config.context import RagContext
from rag_graphs.config.errors import SetupError
from rag_graphs.eval.options import EvalOptions
from rag_graphs.search.structures import LABELS, lacking, refusal

GRAPH_MODES = ("graph", "auto")
"""Search modes that walk the entity graph (``auto``: whenever the collection has one)."""
MAX_REPORT_CALLS_FLAG = "--max-report-calls"


def needed(methods: Sequence[str], ctx: RagContext) -> tuple[str, ...]:
    """The structures a run of ``methods`` under ``ctx`` searches, in build order: what the methods
    declare, the entity graph for graph search (``search_mode`` graph or auto: every method on the
    default engine; ``hybrid`` compares without it) and sentence rows for ``search_unit="sentence"``."""
    wanted = set(required(methods))
    if ctx.retriever is None:
        wanted |= {"entity_graph"} if ctx.search_mode in GRAPH_MODES else set()
        wanted |= {"sentences"} if ctx.search_unit == "sentence" else set()
    return tuple(s for s in STRUCTURES if s in wanted)


def build_needed(ctx: RagContext, methods: Sequence[str], how: EvalOptions) -> list[str]:
    """Build (or finish) every structure ``needed`` over ``ctx``'s collection, in order; return
    their names. A build's summary goes to stderr when ``how.progress``.

    Raises:
        SetupError: a method needs a structure and the run searches the user's own retriever, or
            the community reports would take more LLM calls than ``how.max_report_calls``.
    """
    structures = needed(methods, ctx)
    if ctx.retriever is not None and structures:
        method = next(m for m in methods if REQUIRES.get(m))
        what = " and ".join(LABELS[s] for s in REQUIRES[method])
        raise SetupError(
            f"{method} needs the {what} of a store (`{STRUCTURES[REQUIRES[method][-1]]}` builds them), "
            "and this run searches your own retriever: drop the method or evaluate over a store"
        )
    for structure in structures:
        summary = _BUILDS[structure](ctx, how)
        if how.progress:
            print(f"{LABELS[structure]}: {summary}", file=sys.stderr, flush=True)
    for method in methods:  # a build over chunks it finds nothing in (no entities: no communities)
        if absent := lacking(ctx, method):
            raise SetupError(f"{refusal(method, ctx.collection, absent)} (the evaluation built none)")
    return list(structures)


def _entity_graph(ctx: RagContext, how: EvalOptions) -> str:
    from rag_graphs.entity_graph.build import build_graph
    from rag_graphs.entity_graph.entities import load_extractor
    from rag_graphs.search.retrieval import index_for

    return build_graph(index_for(ctx), load_extractor("spacy"), progress=how.progress).summary()


def _sentences(ctx: RagContext, how: EvalOptions) -> str:
    from rag_graphs.search.retrieval import index_for
    from rag_graphs.store.sentences import build_sentences

    return build_sentences(index_for(ctx)).summary()


def _raptor_tree(ctx: RagContext, how: EvalOptions) -> str:
    from rag_graphs.ingestion.raptor import build_tree
    from rag_graphs.nodes.chat import chat_model
    from rag_graphs.search.retrieval import index_for

    return build_tree(index_for(ctx), chat_model(ctx), progress=how.progress).summary()


def _reports(ctx: RagContext, how: EvalOptions) -> str:
    """The community reports, after their LLM calls are counted, shown and checked against
    ``how.max_report_calls``."""
    from rag_graphs.ingestion.community_reports import build_reports, plan_reports
    from rag_graphs.llm.structured import invoke_structured
    from rag_graphs.nodes.chat import chat_model
    from rag_graphs.search.retrieval import index_for

    index = index_for(ctx)
    plan = plan_reports(index)
    if how.progress:
        print(
            f"community reports: {plan.calls} to write (~{plan.calls} LLM calls), "
            f"{len(plan.kept)} stored, {len(plan.wanted)} communities",
            file=sys.stderr,
            flush=True,
        )
    if plan.calls > how.max_report_calls:
        raise SetupError(
            f"community reports for collection {ctx.collection!r} would take ~{plan.calls} LLM calls, "
            f"above {MAX_REPORT_CALLS_FLAG} {how.max_report_calls}: raise it ({MAX_REPORT_CALLS_FLAG} "
            f"{plan.calls}) or build them beforehand with `{STRUCTURES['reports']}`"
        )
    if not plan.calls and not plan.stale:
        return f"{len(plan.kept)} stored, none to write"
    return build_reports(
        index, chat_model(ctx), ask=invoke_structured, progress=how.progress, plan=plan
    ).summary()


_BUILDS: dict[str, Callable[[RagContext, EvalOptions], str]] = {
    "entity_graph": _entity_graph,
    "sentences": _sentences,
    "reports": _reports,
    "raptor_tree": _raptor_tree,
}
"""Structure -> its build over an evaluation's store, returning the build's summary line."""
