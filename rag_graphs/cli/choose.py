"""``rag-graphs eval --report RUN --compare A,B`` and ``--fit-router``: which method for my documents.

Both read a finished run's rows (``rag_graphs.eval.paired``, ``rag_graphs.eval.router_fit``); no
question is asked again. ``--half tune|check`` keeps one fixed half of the questions
(``rag_graphs.eval.halves``); fitting on ``tune`` scores the router on ``check``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rag_graphs.cli.shared import _fail, console
from rag_graphs.support.terminal import safe


def _print(text: str) -> None:
    # rows are data (a shared run folder): each line printed through the terminal-safety layer
    console.print("\n".join(safe(line) for line in text.splitlines()), highlight=False, soft_wrap=True)


def _side(spec: str, run_dir: Path) -> tuple[str, Path]:
    """``method`` or ``method@OTHER_RUN``: the method and the run whose rows it is read from."""
    method, _, other = spec.partition("@")
    return method.strip(), Path(other.strip()) if other.strip() else run_dir


def _half_ids(rows: list[dict], half: str) -> list[str] | None:
    """The question ids of ``half`` among ``rows`` (None for ``all``)."""
    from rag_graphs.eval.halves import half_of

    if half == "all":
        return None
    if half not in ("tune", "check"):
        _fail(f"--half {half!r}: use tune, check or all")
    return [str(r["id"]) for r in rows if half_of(str(r["id"])) == half]


def compare(run_dir: Path, pair: str, half: str) -> None:
    """Print the paired comparison of two methods (``A,B``; ``B@OTHER_RUN`` reads B from another run)."""
    from rag_graphs.eval.paired import by_question, compare_rows, comparison_table
    from rag_graphs.eval.rows import read_rows

    sides = [s for s in pair.split(",") if s.strip()]
    if len(sides) != 2:
        _fail(f"--compare needs two methods as A,B (B@OTHER_RUN for another run's), got {pair!r}")
    try:
        (a, a_run), (b, b_run) = (_side(s, run_dir) for s in sides)
        a_rows, b_rows = read_rows(a_run), read_rows(b_run)
        for name, run, rows in ((a, a_run, a_rows), (b, b_run, b_rows)):
            if not any(r["method"] == name for r in rows):
                methods = ", ".join(dict.fromkeys(r["method"] for r in rows)) or "none"
                raise ValueError(f"method {name!r} has no rows in {run}; it has {methods}")
        label_b = b if b_run == run_dir else f"{b}@{b_run.name}"
        if label_b == a:
            raise ValueError(f"--compare {pair!r} compares {a} with itself")
        comparison = compare_rows(
            by_question(a_rows, a), by_question(b_rows, b), a, label_b, questions=_half_ids(a_rows, half)
        )
    except (ValueError, FileNotFoundError) as exc:
        _fail(str(exc))
    _print(comparison_table(comparison))
    which = "" if half == "all" else f" ({half} half)"
    console.print(f"{comparison.questions} questions{which}, paired", highlight=False)


def _run_index(config: dict, store: str | None, collection: str | None, embeddings):
    """The index the run searched: its dataset's passages in the eval store (``--store``, else the
    evaluator's default), or, for questions without passages, the user's collection. Raises
    ``SetupError`` when it is not there."""
    from rag_graphs.cli.shared import _context
    from rag_graphs.eval.corpus import collection_name
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.eval.options import EvalOptions
    from rag_graphs.store import open_index
    from rag_graphs.store.checks import check_store_exists

    dataset = load_dataset(config["dataset"])
    if dataset.has_passages:
        uri = store or str(EvalOptions().eval_store)
        name = collection_name(dataset, config.get("embeddings") or "embedded")
    else:
        ctx = _context(store, collection)
        uri, name = ctx.store_uri, ctx.collection
    check_store_exists(uri, name)
    return open_index(uri, name, embeddings)


def _timed(work: Callable[[str], Any], questions: dict, embeddings) -> tuple[dict, float]:
    """``work(text)`` per question id, and the median seconds it adds to a run of ``auto`` (the
    median: the first call loads models).

    The question's vector is made before the clock starts: the method ``auto`` runs embeds its
    question for its own search, and a model that keeps query vectors (the embedded one,
    ``store.local_embeddings``) makes it once for the router and the search, so routing adds
    only what it does with it (the nearest examples' vote, spaCy, a first search). A model that
    keeps none embeds again inside ``work``, and the time shows it."""
    from rag_graphs.store.reads import embed_queries

    out, seconds = {}, []
    for q, text in questions.items():
        embed_queries(embeddings, [text])
        start = time.perf_counter()
        out[q] = work(text)
        seconds.append(time.perf_counter() - start)
    return out, statistics.median(seconds) if seconds else 0.0


def _with_retrieval(
    features: dict, questions: dict, config: dict, store, collection, embeddings
) -> tuple[dict, float]:
    """``features`` with each question's first-search features (``routing.first_retrieval``) when
    the run's index can be opened, and the median seconds of that search; unchanged (and said)
    when not."""
    import dataclasses

    from rag_graphs.config.errors import SetupError
    from rag_graphs.text.routing import first_retrieval

    try:
        index = _run_index(config, store, collection, embeddings)
    except (KeyError, ValueError, FileNotFoundError, SetupError) as exc:
        console.print(f"no first-search features (the run's index: {safe(exc)})", highlight=False)
        return features, 0.0
    k = int(config.get("k") or 4)
    found, seconds = _timed(
        lambda text: first_retrieval(text, index, embeddings, k=k, expr=None), questions, embeddings
    )
    out = {}
    for q, (top, agreement) in found.items():
        out[q] = dataclasses.replace(features[q], top_score=top, agreement=agreement)
    return out, seconds


def fit(
    run_dir: Path,
    out: Path,
    half: str,
    margin: float,
    metric: str | None,
    cost: str,
    store: str | None = None,
    collection: str | None = None,
) -> None:
    """Fit a router on the run's rows and write it to ``out``; with ``--half tune``, score it on check."""
    from rag_graphs.config.context import RagContext
    from rag_graphs.eval.router_fit import Overhead, fit_router, fit_table, write_router
    from rag_graphs.eval.rows import CONFIG, read_config, read_rows
    from rag_graphs.search.retrieval import embeddings_for
    from rag_graphs.text.question_kinds import examples_file
    from rag_graphs.text.routing import question_features

    try:
        rows = read_rows(run_dir)
        if not rows:
            raise ValueError(f"{run_dir} has no result rows")
        config = read_config(run_dir) if (run_dir / CONFIG).is_file() else {}
        metric = metric or ("recall_at_5" if config.get("retrieval_only") else "em")
        ctx = RagContext(**({"embeddings": config["embeddings"]} if config.get("embeddings") else {}))
        embeddings, examples = embeddings_for(ctx), examples_file(ctx.router_examples)
        questions = {str(r["id"]): r["question"] for r in rows if r.get("question")}
        features, question_seconds = _timed(
            lambda text: question_features(text, embeddings, examples), questions, embeddings
        )
        search_seconds = 0.0
        if config.get("dataset"):
            features, search_seconds = _with_retrieval(
                features, questions, config, store, collection, embeddings
            )
        # what routing itself costs a question (auto computes these features before it runs a method)
        overhead = {
            "seconds": Overhead(question=question_seconds, search=search_seconds),
            "retrievals": Overhead(search=1.0),
        }.get(cost, Overhead())
        held_out = None
        if half != "all":
            held_out = _half_ids(rows, "check" if half == "tune" else "tune")
        result = fit_router(
            rows,
            features,
            metric=metric,
            cost=cost,
            margin=margin / 100,
            questions=_half_ids(rows, half),
            held_out=held_out,
            source=str(run_dir.resolve()) + ("" if half == "all" else f" ({half} half)"),
            overhead=overhead,
        )
        path = write_router(result, out)
    except (ValueError, FileNotFoundError) as exc:
        _fail(str(exc))
    _print(fit_table(result))
    if result.held_out:
        console.print(f"held out: router vs always-best: {safe(result.held_out_verdict)}", highlight=False)
    console.print(f"[bold]router[/]: {safe(path)}  (use it with RAG_GRAPHS_ROUTER_FILE={safe(path)})")


def _synth_index(store: str | None, collection: str | None):
    """The user's chunk index (the one ``ask`` searches), which must exist."""
    from rag_graphs.cli.shared import _context
    from rag_graphs.search.retrieval import readable_index

    return readable_index(_context(store, collection))


def _synth_model(spec: str | None):
    """The chat model that writes the questions (``--model``, else ``RAG_GRAPHS_CHAT_MODEL``)."""
    from rag_graphs.cli.shared import _context
    from rag_graphs.nodes.chat import chat_model

    return chat_model(_context(None, None, chat_model=spec))


def synth(out: Path, n: int, seed: int, model: str | None, store: str | None, collection: str | None) -> None:
    """``rag-graphs eval synth``: write up to ``n`` checked questions from the store to ``out``."""
    from rag_graphs.eval.synth import synthesize

    try:
        result = synthesize(_synth_index(store, collection), _synth_model(model), out, n=n, seed=seed)
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        _fail(str(exc))
    dropped = ", ".join(f"{count} {why}" for why, count in sorted(result.rejected.items())) or "none"
    console.print(
        f"wrote {result.written} questions to {safe(result.path)} (drafts dropped: {safe(dropped)}); "
        f"run them with rag-graphs eval --dataset {safe(result.path)}",
        highlight=False,
    )
