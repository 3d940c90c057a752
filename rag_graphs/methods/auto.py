"""Auto, the adaptive router (in the spirit of Adaptive-RAG, Jeong et al. 2024): classify, then route.

    START -> classify -> clarify --(no_retrieval)--> answer_directly -> END
                                 \\--(single_hop | multi_hop | global_summary)--> <method> -> END

The classifier is ``RagContext.router``: ``examples`` (default) gives the
question the kind of its nearest labelled example questions under the
embedding model (``rag_graphs.text.question_kinds``; no model call, and it works
with the 135M embedded model, which picks the first option it is offered);
``llm`` asks the chat model. The kind picks a method from ``RagContext.routes``
(default: single_hop=naive, multi_hop=ircot, global_summary=graphrag), so cheap
questions get cheap methods; ``RagContext.router_file`` replaces ``routes`` with a router fitted
on the user's own labelled questions (``rag_graphs.text.routing``). Global questions go to
GraphRAG when the collection has community reports (``rag-graphs graph communities``): on the
theme-coverage benchmark its global search brings more of a corpus's themes into the context
than RAPTOR's tree (BENCHMARKS.md, "GraphRAG global search: theme coverage"). Without reports they go to
RAPTOR when the collection has a tree (``rag-graphs raptor build``), else to RAG-Fusion;
the first step says so.
``clarify`` passes on, unless the classifier was unsure (a close vote, an unreadable reply)
and ``RagContext.interrupts`` has ``clarify``: then the run asks back, and a clarified
question is classified again.

Every method ``routes`` may name is a node of this graph, named as the method, that runs
the method's own compiled graph as a LangGraph subgraph (``nodes.subgraphs``): its steps
follow the router's, whose first step says which kind was seen and which method was
chosen. As a subgraph the method checkpoints under its node's namespace with the run's
checkpointer, so a run that failed or was killed inside it resumes at the method's failed
node (classify and the method's earlier nodes do not run again); it streams its events
and steps as they happen (``stream(..., subgraphs=True)``); ``get_state(config,
subgraphs=True)`` shows where it waits; and it stops before its answer node when the run
config names the stop under ``INTERRUPT_SUBGRAPHS_BEFORE`` (``rag_graphs.run``'s
``stop_before_answer`` does). The subgraphs are the methods' module-level graphs, compiled
once on import, never per run.

When it pays: a mixed stream of questions: each goes to the cheapest method that fits its kind (by
default naive, ircot, graphrag).
Cost: no model call to classify (the default ``examples`` router), then the chosen method's cost.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Literal, get_args

from langgraph.graph import END, StateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel

from rag_graphs.catalog import METHODS
from rag_graphs.config.context import RagContext
from rag_graphs.config.fields import check_route
from rag_graphs.config.runtime import get_context
from rag_graphs.llm.structured import invoke_structured
from rag_graphs.methods import get_graph
from rag_graphs.nodes import make_generate
from rag_graphs.nodes.builder import BEGIN, compile_method, new_builder
from rag_graphs.nodes.chat import calls_usage, chat_model
from rag_graphs.nodes.events import emit, step
from rag_graphs.nodes.interrupts import ask_back
from rag_graphs.nodes.subgraphs import subgraph_node
from rag_graphs.prompts import load_prompt
from rag_graphs.search.own import refuse_own_retriever
from rag_graphs.search.retrieval import embeddings_for, readable_index
from rag_graphs.search.structures import LABELS, lacking
from rag_graphs.state import RagState, Unset
from rag_graphs.store.filters import search_expr
from rag_graphs.text.question_kinds import Kind, classify_by_examples, examples_file
from rag_graphs.text.routing import features_of, first_retrieval, load_router

_CLASSIFY = load_prompt("classify_question")
FALLBACK_METHOD = "naive"
NO_TREE_METHOD = "rag_fusion"
"""Where questions routed to RAPTOR go when the collection has no tree (and those routed to
GraphRAG when it has neither community reports nor a tree)."""
INSTEAD: dict[str, str] = {"graphrag": "raptor", "raptor": NO_TREE_METHOD}
"""What runs instead of a method whose declared structures the collection lacks; a method not
named here falls back to ``FALLBACK_METHOD`` (needs nothing derived, so the chain ends)."""


RoutedMethod = Literal[
    "naive",
    "fixed_step",
    "iterative",
    "react",
    "ircot",
    "self_rag",
    "crag",
    "hyde",
    "multi_query",
    "rag_fusion",
    "step_back",
    "decomposition",
    "planned",
    "drag",
    "iterdrag",
    "raptor",
    "hipporag",
    "graphrag",
]
"""The methods ``RagContext.routes`` may name (``config.fields.check_route``: every method but
``auto``), each a node of this graph; spelled out so the router's return type names its targets."""

ROUTED: tuple[RoutedMethod, ...] = get_args(RoutedMethod)
if set(ROUTED) != set(METHODS) - {"auto"}:  # a method added to the catalog and not here
    raise RuntimeError(
        "rag_graphs/methods/auto.py: RoutedMethod must list every method of rag_graphs/catalog.py's "
        f"METHODS but auto; differs by {sorted(set(ROUTED) ^ (set(METHODS) - {'auto'}))}"
    )
_ROUTE: dict[str, RoutedMethod] = {method: method for method in ROUTED}


class AutoState(RagState, total=False):
    kind: Annotated[str, Unset("")]  # the question kind the classifier saw
    method: Annotated[str, Unset("")]  # the method routed to ("answer directly" for no_retrieval)
    unsure: str  # why the classifier is unsure of ``kind`` ("" or None: it is not)


class QuestionKind(BaseModel):
    """What kind of search the question needs."""

    kind: Kind


def chosen_method(kind: str, ctx: RagContext) -> str:
    """The method for ``kind`` under ``RagContext.routes`` (naive when the kind has no route).

    ``routes`` is checked when set; checked again here, as the dict can be changed in place."""
    return check_route(kind, ctx.routes.get(kind, FALLBACK_METHOD))


def available_method(kind: str, ctx: RagContext) -> tuple[str, str]:
    """The method to run for ``kind`` and why, when it is not the route itself (``runnable``)."""
    return runnable(chosen_method(kind, ctx), ctx)


def runnable(method: str, ctx: RagContext) -> tuple[str, str]:
    """``method``, or what runs instead (``INSTEAD``, else ``FALLBACK_METHOD``) while the collection
    lacks a structure the method declares it needs (``catalog.REQUIRES``), and why."""
    why: list[str] = []
    tried: set[str] = set()
    while method not in tried and (absent := lacking(ctx, method)):  # a lacking fallback runs, and refuses
        tried.add(method)
        why.append(f"no {' and '.join(LABELS[s] for s in absent)} for {ctx.collection!r}, so not {method}")
        method = INSTEAD.get(method, FALLBACK_METHOD)
    return method, f" ({'; '.join(why)})" if why else ""


def fitted_method(question: str, kind: str, ctx: RagContext) -> tuple[str, str]:
    """The method ``RagContext.router_file`` fitted for the question's segment, and why (the
    file, the question's features, the segment and the fit's reason)."""
    router = load_router(ctx.router_file or "")
    features = features_of(question, kind)
    if router.needs_retrieval:  # one search more, under the run's access filter
        refuse_own_retriever(ctx, f"the router file {Path(router.path).name} (it splits on a first search)")
        top, agreement = first_retrieval(
            question, readable_index(ctx), embeddings_for(ctx), k=ctx.k, expr=search_expr(ctx)
        )
        features = dataclasses.replace(features, top_score=top, agreement=agreement)
    method, why = router.choose(features)
    method, instead = runnable(method, ctx)
    # the file's name, not its path: a served run's steps do not show the server's folders
    return method, f"{instead} (router file {Path(router.path).name}: {features.describe()}; {why})"


def warm(ctx: RagContext) -> None:
    """Load what ``classify`` loads once per process: the example questions' vectors (the
    ``examples`` router), and the router file and spaCy's question extractor when a file is
    set. The evaluator calls it before its clock starts (``eval.runner.warm_up``): left to the
    first question, the examples' vectors took 4.3 s on MuSiQue, 0.045 s a question over 95, and
    read as routing's cost."""
    if ctx.router != "llm":
        classify_by_examples("warm up", embeddings_for(ctx), examples_file(ctx.router_examples))
    if ctx.router_file:
        load_router(ctx.router_file)
        features_of("warm up", "single_hop")


def classify(state: AutoState, runtime: Runtime[RagContext]) -> dict:
    """Classify the question by ``RagContext.router``.

    ``llm``: a malformed reply counts as single-hop, the cheap safe default.
    ``examples``: the step names the nearest example that decided it.
    """
    ctx = get_context(runtime)
    if ctx.router == "llm":
        messages = _CLASSIFY.format_messages(question=state["question"])
        out = invoke_structured(chat_model(ctx), messages, QuestionKind, QuestionKind(kind="single_hop"))
        kind: str = out.value.kind
        why, spent = "", calls_usage(out.calls)
        unsure = "the model's reply named no kind" if out.method == "default" else ""
    else:
        examples = examples_file(ctx.router_examples)
        vote = classify_by_examples(state["question"], embeddings_for(ctx), examples)
        kind, spent = vote.kind, {}
        why = f" (nearest example: {vote.nearest!r}, similarity {vote.similarity:.2f})"
        unsure = f"the nearest examples' vote was close (margin {vote.margin:.2f})" if vote.unsure else ""
    if kind == "no_retrieval":
        target, instead = "answer directly", ""
    elif ctx.router_file:
        target, instead = fitted_method(state["question"], kind, ctx)
    else:
        target, instead = available_method(kind, ctx)
    emit("end", kind=kind, method=target)
    text = f"{kind} -> {target}{instead}{why}"
    update = {"kind": kind, "method": target, "steps": [step("decide", text=text)], "usage": spent}
    return update | {"unsure": unsure}


def clarify(state: AutoState, runtime: Runtime[RagContext]) -> dict:
    """Ask back when the classifier was unsure and ``RagContext.interrupts`` has ``clarify``
    (``rag_graphs.nodes.interrupts.ask_back``); a clarified question replaces the question
    and is classified again."""
    if not state.get("unsure"):
        return {}
    question, asked = ask_back(
        get_context(runtime), state["question"], state["kind"], state["unsure"], state.get("stops_for", ())
    )
    if question == state["question"]:
        return {"steps": asked}
    again = classify({**state, "question": question}, runtime)
    return again | {"question": question, "steps": asked + again["steps"]}


def route_kind(state: AutoState) -> Literal["answer_directly", RoutedMethod]:
    """No retrieval for questions that need none; every other kind goes to its method's node."""
    return "answer_directly" if state.get("kind") == "no_retrieval" else _ROUTE[state["method"]]


_ROUTED_NODES = {method: subgraph_node(method, get_graph(method)) for method in ROUTED}
"""One node per routable method, running the method's module-level graph (compiled once, on
import) as a subgraph (``rag_graphs.nodes.subgraphs``): every compilation of ``build()`` shares them."""


def build() -> StateGraph:
    """The uncompiled graph."""
    builder = new_builder(AutoState)
    builder.add_node("classify", classify)
    builder.add_node("clarify", clarify)
    builder.add_node("answer_directly", make_generate("answer_directly"))
    builder.add_edge(BEGIN, "classify")
    builder.add_edge("classify", "clarify")
    builder.add_conditional_edges("clarify", route_kind)
    builder.add_edge("answer_directly", END)
    for method, node in _ROUTED_NODES.items():
        builder.add_node(method, node)
        builder.add_edge(method, END)
    return builder


graph = compile_method(build(), "auto")
