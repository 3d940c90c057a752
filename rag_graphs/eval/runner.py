"""Run methods over a dataset, one result row per (method, question), resumable.

Rows are appended to ``rows.jsonl`` and flushed as each run completes, so an
interrupted evaluation loses at most the runs in flight; ``resume`` reads the
rows back and runs only what is missing. ``config.json`` records what was run.

A row scores the answer (EM, F1, contains) and the retrieval: ``recall`` over
every passage the run retrieved, and ``recall_at_2`` / ``recall_at_5`` (R@k)
over the top of its final context, ``documents``, which every method returns as
one ranking, best first. ``retrieval_only`` stops each run before its answer
(``rag_graphs.run``'s ``stop_before_answer``): the answer metrics are then None,
not 0, and the cost is what retrieval took.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

from rag_graphs.catalog import METHODS
from rag_graphs.config.context import RagContext
from rag_graphs.config.specs import all_of
from rag_graphs.config.tracing import spec_name, trace_config
from rag_graphs.eval.corpus import PASSAGE_FIELD, open_corpus, passages_filter
from rag_graphs.eval.datasets import Dataset, Example, load_dataset
from rag_graphs.eval.judges import Evaluator, judge_run
from rag_graphs.eval.metrics import RANKS, answer_scores, recall_at_k, supporting_recall
from rag_graphs.eval.options import READERS, EvalOptions, Setting
from rag_graphs.eval.rows import (
    ANSWER_METRICS,
    CONFIG,
    ROWS,
    _repair_tail,
    _run_folder,
    read_config,
    read_rows,
    row_reader,
    run_folder_lock,
)
from rag_graphs.eval.structures import build_needed
from rag_graphs.eval.timing import Timer, rotated
from rag_graphs.methods import get_graph
from rag_graphs.nodes.reading import reader_of, warm_up_reader
from rag_graphs.run import run
from rag_graphs.search.retrieval import embeddings_for
from rag_graphs.support.progress import progress_bar
from rag_graphs.support.redaction import redact

log = logging.getLogger(__name__)


def score_row(
    method: str,
    example: Example,
    out: dict,
    seconds: float,
    timer: Timer,
    *,
    retrieval_only: bool = False,
    reader: str = "generate",
) -> dict:
    """The result row of one run: prediction, metrics, cost and the time split; ``reader`` is
    the reader that answered (``RagContext.reader`` resolved: ``generate`` or ``extract``).

    A passage matches a gold id by its chunk id, the passage a piece of a long passage
    belongs to (``passage_id``), or its source file's name (a user's questions may name
    the files that answer them). ``recall`` reads every
    retrieved passage; ``recall_at_k`` the top k of ``documents``, in its order.
    With ``retrieval_only``, the answer metrics are None. A failed run (``out``
    carrying ``error``) is scored on what it did before failing, its cost included.
    """
    docs = out.get("documents", [])
    retrieved = [str(d.id) for d in docs]
    positions = [
        {str(d.id), Path(str(d.metadata.get("source", ""))).name, str(d.metadata.get(PASSAGE_FIELD, ""))}
        - {""}
        for d in docs
    ]
    usage = out.get("usage", {})
    prediction = str(out.get("answer", ""))
    gold = example.supporting_ids
    answer = (
        dict.fromkeys(["short", *ANSWER_METRICS])
        if retrieval_only
        else answer_scores(prediction, example.golds)
    )
    error = out.get("error")
    return {
        "method": method,
        "reader": reader,
        "id": example.id,
        "question": example.question,
        "golds": example.golds,
        "prediction": prediction,
        **answer,
        "recall": supporting_recall(set().union(*positions), gold),
        **{f"recall_at_{k}": recall_at_k(positions, gold, k) for k in RANKS},
        "retrieved_ids": retrieved,
        # each search in order (query, hit ids): how the final ranking fused them can be
        # re-scored offline (e.g. another fusion) without running the model again
        "searches": [
            {"query": s.get("query", ""), "doc_ids": s.get("doc_ids", [])}
            for s in out.get("steps", [])
            if s.get("kind") == "retrieve" and "doc_ids" in s
        ],
        "supporting_ids": list(gold),
        "question_hops": example.hops,  # the dataset's count of the question's hops
        "type": example.type,
        "llm_calls": usage.get("llm_calls", 0),
        "prompt_tokens": usage.get("prompt_tokens", 0),
        "completion_tokens": usage.get("completion_tokens", 0),
        "retrievals": usage.get("retrievals", 0),
        "retrieval_hops": usage.get("hops", 0),  # the run's retrieval rounds (usage["hops"])
        # how the run ended (None for a failed run or one stopped before its answer)
        "stop_reason": out.get("stop_reason"),
        "outcome": out.get("outcome"),
        "confidence": out.get("confidence"),  # Self-RAG's high / medium / low; None for other methods
        "seconds": seconds,
        "model_seconds": timer.model_seconds,
        "search_seconds": timer.search_seconds,
        "retrieval_only": retrieval_only,
        # where the run stopped (None: it answered without an answer node, e.g. IterDRAG's iterate)
        **({"stopped_before": out.get("stopped_before")} if retrieval_only else {}),
        # Error texts can quote a URL or header with a key in it (HTTP client errors).
        "error": redact(str(error))[:500] if error else None,
    }


def run_one(
    method: str,
    example: Example,
    ctx: RagContext,
    *,
    retrieval_only: bool = False,
    evaluators: Sequence[Evaluator] = (),
    thread: tuple[str, str | Path] | None = None,
) -> dict:
    """Ask one question with one method; a failing run becomes a row with ``error`` set.

    A run that fails at a node is scored on its partial result (``RunFailed.result``:
    the passages, steps and cost up to the failure), so failures count what they cost.
    ``retrieval_only`` stops the run before its answer (see ``rag_graphs.run``).
    ``evaluators`` (judges, a user's LangSmith or openevals evaluators) score the answer into
    the row's ``judged`` (key -> score, None where a verdict could not be had); ``thread``:
    (thread id, checkpoints) to checkpoint the run in.
    """
    timer = Timer()
    checkpointed = {"thread_id": thread[0], "checkpoints": thread[1]} if thread else {}
    config = trace_config(ctx, method, question_id=example.id)
    config["callbacks"] = [timer]
    config["tags"] = [*config["tags"], "rag-graphs-eval"]
    start = time.perf_counter()
    try:
        out = run(
            method,
            example.question,
            ctx,
            config=config,
            raise_on_failure=False,
            stop_before_answer=retrieval_only,
            **checkpointed,  # type: ignore[arg-type]
        )
    except Exception as exc:  # failed outside any node: recorded, so one bad run never sinks an evaluation
        out = {"error": f"{type(exc).__name__}: {exc}"}
    seconds = time.perf_counter() - start
    row = score_row(
        method, example, out, seconds, timer, retrieval_only=retrieval_only, reader=reader_of(ctx)
    )
    if evaluators and not retrieval_only:
        row["judged"] = judge_run(evaluators, example.question, example.golds, out)
    return row


def _postfix(row: dict) -> str:
    """The progress bar's note on the latest row: its answer F1, or its R@5 without an answer."""
    metric = "f1" if row["f1"] is not None else "recall_at_5"
    value = row[metric]
    return f"{row['method']} {metric}={'n/a' if value is None else f'{value:.2f}'}"


def warm_up(ctx: RagContext, methods: list[str], readers: Sequence[str] = ()) -> None:
    """Load graphs and models before the clock starts, so one-time loads don't count as overhead
    (the extract reader's spaCy pipeline too, when a reader is ``extract``; auto's router's)."""
    from rag_graphs.nodes.chat import chat_model

    for method in methods:
        get_graph(method)
    chat_model(ctx)
    embeddings_for(ctx).embed_query("warm up")
    if "auto" in methods:  # its router's example vectors, file and spaCy
        from rag_graphs.methods.auto import warm

        warm(ctx)
    if "extract" in readers:
        warm_up_reader(ctx)


def _question_context(ctx: RagContext, example: Example, setting: Setting) -> RagContext:
    """The question's context: the distractor and oracle settings narrow the operator's
    ``search_filter`` to the question's own or gold passages (AND), never replace it."""
    if setting == "open":
        return ctx
    ids = example.passage_ids if setting == "distractor" else example.supporting_ids
    if not ids:
        raise ValueError(
            f"question {example.id!r} has no {'passages' if setting == 'distractor' else 'supporting_ids'}"
        )
    return dataclasses.replace(ctx, search_filter=all_of(ctx.search_filter, passages_filter(ids)))


def evaluate(
    dataset: str | Path | Dataset,
    methods: Iterable[str] = ("naive",),
    *,
    context: RagContext | None = None,
    options: EvalOptions | None = None,
) -> Path:
    """Run ``methods`` over the dataset's questions; return the run directory. How it runs is one
    ``EvalOptions`` (``rag_graphs.eval.options``): setting, which questions, folders, scoring.

    ``open`` indexes the dataset's passages once (in ``eval_store``, reused by
    later runs) and asks with no context; ``distractor`` and ``oracle`` search
    only each question's own or gold passages. Without passages (a user's
    questions about their own ingested documents), the context's store and
    collection are searched. Before the first run, the derived structures the methods declare
    they need (``catalog.REQUIRES``: graphrag's community reports, raptor's tree, the entity graph)
    are built where the store lacks them (``rag_graphs.eval.structures``; the reports' LLM calls
    are counted first and refused above ``max_report_calls``). An existing ``run_dir`` is resumed: its
    ``config.json`` must match, and only missing rows are run.

    ``retrieval_only`` stops every run before its answer, so retrieval (SP recall,
    R@2, R@5) is measured on hundreds of questions in minutes: rows carry no answer
    metrics, and their cost is the retrieval's. ``context.k`` is the context size:
    R@5 needs ``k >= 5`` for methods that retrieve once.

    ``evaluators`` add scores beyond the lexical ones: ``rag_graphs.eval.judges`` (LLM-as-judge
    correctness, groundedness, citation precision) or any evaluator function in LangSmith's and
    openevals' shape; the report gives each a column with the same bootstrap interval. ``judge``
    names the chat model spec behind them (``--judge``): it is recorded in ``config.json``, so
    ``rag-graphs eval --resume`` judges the remaining questions with it again.

    A run folder has one writer at a time, across processes (``rows.run_folder_lock``).
    ``checkpoints`` (SQLite file or ``postgresql://`` URI) checkpoints each run on a thread of the
    folder's ``run_id``: a resumed evaluation continues a killed one's runs in flight, not anew.

    Raises:
        RunFolderBusy: another evaluation is writing ``run_dir`` (a ``RuntimeError``).
        ValueError: an unknown method or setting, or ``run_dir`` holds a run with other settings.
        SetupError: a structure a method needs cannot be built here (``max_report_calls``, the
            user's own retriever); a ``ValueError``.
    """
    how = options or EvalOptions()
    setting, limit, sample, seed = how.setting, how.limit, how.sample, how.seed
    ds = dataset if isinstance(dataset, Dataset) else load_dataset(dataset)
    methods = list(methods)
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {', '.join(unknown)}; available: {', '.join(METHODS)}")
    if setting not in ("open", "distractor", "oracle"):
        raise ValueError(f"setting {setting!r}: use 'open', 'distractor' or 'oracle'")
    ctx = dataclasses.replace(context or RagContext(), interrupts=frozenset())  # nobody is there to answer
    readers = list(dict.fromkeys(how.readers)) or [reader_of(ctx)]
    if wrong := [r for r in readers if r not in READERS]:
        raise ValueError(f"reader(s) {', '.join(map(repr, wrong))}: use {' or '.join(map(repr, READERS))}")
    examples = ds.select(limit=limit, sample=sample, seed=seed)
    config = {
        "dataset": str((ds.questions_path.parent if ds.corpus_path else ds.questions_path).resolve()),
        "dataset_name": ds.name,
        "setting": setting,
        "methods": methods,
        "readers": readers,
        "limit": limit,
        "sample": sample,
        "seed": seed,
        "question_ids": [e.id for e in examples],
        "chat_model": spec_name(ctx.chat_model),
        "embeddings": spec_name(ctx.embeddings),
        "k": ctx.k,
        "search_mode": ctx.search_mode,
        "max_hops": ctx.max_hops,
        "max_steps": ctx.max_steps,
        "router": ctx.router,
        "router_file": ctx.router_file,  # auto's fitted router, when one is set
        "demonstrations": ctx.demonstrations,
        "concurrency": how.concurrency,
        "retrieval_only": how.retrieval_only,
        "evaluators": [getattr(e, "__name__", type(e).__name__) for e in how.evaluators],
        "judge": how.judge,
    }
    run_dir = _run_folder(how.run_dir, how.runs_root, ds.name)
    with run_folder_lock(run_dir):  # one evaluation writes a run folder at a time, across processes
        return _fill(run_dir, ds, ctx, config, examples, methods, how)


def _fill(
    run_dir: Path,
    ds: Dataset,
    ctx: RagContext,
    config: dict,
    examples: list[Example],
    methods: list[str],
    how: EvalOptions,
) -> Path:
    """``evaluate``'s work once it holds the run folder's lock: check or write ``config.json``,
    open the corpus, and run what ``rows.jsonl`` does not hold yet (read under the lock, so
    two processes never both run a missing question)."""
    config_path = run_dir / CONFIG
    readers = list(config["readers"])  # this call's; config.json names every reader the folder ran
    if config_path.exists():
        stored = read_config(run_dir)
        stored.setdefault("retrieval_only", False)  # runs from before the option answered
        different = [
            k
            for k in ("dataset", "setting", "question_ids", "chat_model", "embeddings", "k", "retrieval_only")
            if (
                Path(str(stored.get(k, ""))).resolve() != Path(str(config[k]))
                if k == "dataset"
                else stored.get(k) != config[k]
            )
        ]  # the dataset by resolved path: a run resumed from another folder is the same run
        if different:
            raise ValueError(
                f"{run_dir} holds a run with other {', '.join(different)}; use a new run directory"
            )
        config["methods"] = list(dict.fromkeys([*stored.get("methods", []), *methods]))
        config["readers"] = list(dict.fromkeys([*stored.get("readers", ["generate"]), *config["readers"]]))
        config["judge"] = how.judge or stored.get("judge")  # what the next --resume judges with
        config["started"] = stored.get("started")
        config["run_id"] = stored.get("run_id")
    config["started"] = config.get("started") or datetime.now().isoformat(timespec="seconds")
    config["run_id"] = config.get("run_id") or uuid.uuid4().hex  # names the runs' checkpoint threads
    config_path.write_text(json.dumps(config, indent=2))

    if ds.has_passages:
        index = open_corpus(ds, how.eval_store, embeddings_for(ctx), ctx.embeddings)
        ctx = dataclasses.replace(ctx, store_uri=index.uri, collection=index.collection)
    elif how.setting != "open":
        raise ValueError(f"setting {how.setting!r} needs passages; dataset {ds.name!r} has none")

    # what the methods declare they need (catalog.REQUIRES) and the search settings use, built
    # (or finished) here, explicitly, before any run
    build_needed(ctx, methods, how)
    contexts = {  # fails before any run
        (r, e.id): _question_context(dataclasses.replace(ctx, reader=r), e, how.setting)
        for r in readers
        for e in examples
    }
    warm_up(ctx, methods, readers)
    done = {(r["method"], row_reader(r), r["id"]) for r in read_rows(run_dir)}
    todo = [  # question-major, the first method rotating
        (m, r, e)
        for i, e in enumerate(examples)
        for m in rotated(methods, i)
        for r in readers
        if (m, r, e.id) not in done
    ]
    rows_path = run_dir / ROWS
    _repair_tail(rows_path)
    lock = threading.Lock()
    bar = progress_bar(total=len(todo), desc=f"eval {ds.name}", unit="run", disable=not how.progress)
    with rows_path.open("a", encoding="utf-8") as sink:

        def work(item: tuple[str, str, Example]) -> None:
            method, reader, example = item
            # resumed by a run of this folder; the generator's threads keep the names they had before
            # readers were compared, so a folder written then resumes on its own checkpoints
            variant = method if reader == "generate" else f"{method}-{reader}"
            thread = f"eval-{config['run_id']}-{variant}-{example.id}"
            row = run_one(
                method,
                example,
                contexts[(reader, example.id)],
                retrieval_only=how.retrieval_only,
                evaluators=how.evaluators,
                thread=(thread, how.checkpoints) if how.checkpoints else None,
            )
            with lock:
                sink.write(json.dumps(row, default=str) + "\n")
                sink.flush()
                os.fsync(sink.fileno())
                bar.update(1)
                bar.set_postfix_str(_postfix(row))

        if how.concurrency <= 1:
            for item in todo:
                work(item)
        else:
            with ThreadPoolExecutor(max_workers=how.concurrency) as pool:
                list(pool.map(work, todo))
    bar.close()
    return run_dir
