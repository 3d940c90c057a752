"""``rag-graphs eval`` (compare methods on a QA set) and ``rag-graphs mine-demos``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from rag_graphs.cli.shared import (
    CollOpt,
    ModelOpt,
    StoreOpt,
    _context,
    _eval_store,
    _fail,
    app,
    console,
    with_search_options,
)
from rag_graphs.support.terminal import safe

if TYPE_CHECKING:
    from rag_graphs.eval.options import Reader


@app.command("eval")
@with_search_options
def eval_command(
    action: Annotated[
        str | None,
        typer.Argument(
            help="synth: write labelled questions from your own store (bridge pairs from the entity "
            "graph and single passages, written by --model, checked) to --out FILE (questions.jsonl), "
            "--n of them, in the format --dataset reads"
        ),
    ] = None,
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
    model: ModelOpt = None,
    k: Annotated[
        int | None,
        typer.Option(min=1, help="context size: chunks per retrieval (R@5 needs k >= 5) [env RAG_GRAPHS_K]"),
    ] = None,
    reader: Annotated[
        str | None,
        typer.Option(
            help="who answers: extract (no model call: a cited answer span from the passages), "
            "generate (the chat model), or both comma-separated to compare them in one run "
            "[default: env RAG_GRAPHS_READER, auto = extract on the embedded model; --resume: the run's]"
        ),
    ] = None,
    retrieval_only: Annotated[
        bool,
        typer.Option(
            "--retrieval-only",
            help="stop each run before its answer: passage recall and R@2/R@5 only, no answer call",
        ),
    ] = False,
    judge: Annotated[
        str | None,
        typer.Option(
            help="a chat model spec that judges each answer (LLM-as-judge): correctness, groundedness "
            "in its cited passages, citation precision, each a report column [--resume: the run's]"
        ),
    ] = None,
    concurrency: Annotated[int, typer.Option(help="questions run in parallel")] = 1,
    checkpoints: Annotated[
        str | None,
        typer.Option(
            help="checkpoint every run's steps in this SQLite file or postgresql:// URI, so --resume "
            "continues the runs a killed evaluation had in flight (pass it again with --resume)"
        ),
    ] = None,
    max_report_calls: Annotated[
        int,
        typer.Option(
            min=0,
            help="most LLM calls the evaluation may spend writing the community reports graphrag needs "
            "and the store lacks (one per community, counted and printed first); above it, refused",
        ),
    ] = 200,  # EvalOptions.max_report_calls
    out: Annotated[
        Path, typer.Option(help="folder for new run directories (synth: the questions file, questions.jsonl)")
    ] = Path("runs"),
    resume: Annotated[Path | None, typer.Option(help="a run directory to continue")] = None,
    report: Annotated[
        Path | None, typer.Option(help="re-render the report of a run directory and exit")
    ] = None,
    pairwise: Annotated[
        str | None,
        typer.Option(
            help="with --report RUN_DIR and --judge: compare two of the run's methods A,B answer by "
            "answer (GraphRAG's comprehensiveness, diversity, empowerment, directness; both orders); "
            "win rates of A to pairwise-A-B.json beside the run [--judge: the run's by default]"
        ),
    ] = None,
    pairwise_repeats: Annotated[
        int, typer.Option(min=1, help="--pairwise: ask each comparison this many times per order")
    ] = 1,
    compare: Annotated[
        str | None,
        typer.Option(
            help="with --report RUN_DIR: paired tests of two methods A,B on the same questions (B@OTHER_RUN "
            "reads B from another run): EM, F1, contains, R@2/R@5, calls, tokens, seconds, each with a "
            "paired bootstrap interval, an exact McNemar (0/1 scores) or permutation test p and a verdict"
        ),
    ] = None,
    fit_router: Annotated[
        Path | None,
        typer.Option(
            help="with --report RUN_DIR: fit auto's router on the run (per question, the cheapest method "
            "within --margin of the best) and write it to this JSON (RAG_GRAPHS_ROUTER_FILE)"
        ),
    ] = None,
    margin: Annotated[
        float, typer.Option(min=0, help="--fit-router: quality points a cheaper method may lose")
    ] = 2.0,
    metric: Annotated[
        str | None,
        typer.Option(
            help="--fit-router: em | f1 | recall_at_5 [default: em; retrieval-only runs: recall_at_5]"
        ),
    ] = None,
    cost: Annotated[
        str, typer.Option(help="--fit-router: llm_calls | seconds | tokens | retrievals (searches)")
    ] = "llm_calls",
    n: Annotated[int, typer.Option("--n", min=1, help="synth: questions to write at most")] = 50,
    half: Annotated[
        str,
        typer.Option(
            help="--compare / --fit-router: the fixed tune or check half of the questions, or all "
            "(fitting on tune scores the router on check)"
        ),
    ] = "all",
    store: StoreOpt = None,
    collection: CollOpt = None,
    *,
    search: dict[str, Any],
) -> None:
    """Compare methods on a QA set: EM/F1, passage recall and R@2/R@5, LLM calls, tokens, seconds;
    table and plots. With --retrieval-only, retrieval alone, fast enough for hundreds of questions;
    with --judge, LLM-as-judge scores beside EM/F1."""
    from rag_graphs.catalog import METHODS
    from rag_graphs.eval import EvalOptions, evaluate, markdown_table, read_rows, summarize, write_report
    from rag_graphs.eval.rows import CONFIG, read_config

    if action is not None:
        import rag_graphs.cli.choose as choose

        if action != "synth":
            _fail(f"rag-graphs eval {action!r}: the one action is synth (or no action: run an evaluation)")
        choose.synth(
            Path("questions.jsonl") if out == Path("runs") else out, n, seed, model, store, collection
        )
        return
    if compare is not None or fit_router is not None:
        import rag_graphs.cli.choose as choose

        if report is None:
            _fail("--compare and --fit-router read a finished run: give it with --report RUN_DIR")
        if compare is not None:
            choose.compare(report, compare, half)
        if fit_router is not None:
            choose.fit(report, fit_router, half, margin, metric, cost, store, collection)
        return
    if pairwise is not None:
        if report is None:
            _fail("--pairwise compares the answers of a finished run: give it with --report RUN_DIR")
        _pairwise(report, pairwise, judge, pairwise_repeats, limit)
        return
    try:
        if report is None:
            if resume is not None and (dataset is None or (resume / CONFIG).is_file()):
                # A resumed run keeps its dataset, context size, mode and judge unless told otherwise.
                stored = read_config(resume)
                judge = judge or stored.get("judge")
                dataset = dataset or Path(stored["dataset"])
                k = k if k is not None else stored.get("k")
                retrieval_only = retrieval_only or bool(stored.get("retrieval_only"))
                methods = methods or ",".join(stored.get("methods") or ["naive"])  # every method of the run
                reader = reader or ",".join(stored.get("readers") or [])
            methods = methods or "naive"
            if dataset is None:
                _fail("--dataset is required (or --resume RUN_DIR, or --report RUN_DIR)")
            if judge and retrieval_only:
                _fail("--judge scores answers; a --retrieval-only run has none (drop one of the two)")
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
                **search,
            )
            report = evaluate(
                dataset,
                chosen,
                context=ctx,
                options=EvalOptions(
                    **_eval_store(store),
                    setting=setting,  # type: ignore[arg-type]  # checked by evaluate
                    limit=limit,
                    sample=sample,
                    seed=seed,
                    concurrency=concurrency,
                    run_dir=resume,
                    runs_root=out,
                    retrieval_only=retrieval_only,
                    readers=cast(
                        "tuple[Reader, ...]", tuple(r.strip() for r in (reader or "").split(",") if r.strip())
                    ),
                    evaluators=_judges(judge),
                    judge=judge,
                    checkpoints=checkpoints,
                    max_report_calls=max_report_calls,
                ),
            )
        path = write_report(report)
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        _fail(str(exc))
    table = markdown_table(summarize(read_rows(report)))
    # rows are data (a shared run folder): each line printed through the terminal-safety layer
    console.print("\n".join(safe(line) for line in table.splitlines()), highlight=False, soft_wrap=True)
    console.print(f"[bold]report[/]: {safe(path)}  (plots beside it)")


def _judges(spec: str | None) -> list:
    """The three judges on the model ``spec`` names (none without one); loaded before any run,
    so a spec whose provider is missing fails before the first question."""
    if not spec:
        return []
    from rag_graphs.eval.judges import JUDGE_TOKENS, default_judges
    from rag_graphs.llm.models import load_chat_model

    return default_judges(load_chat_model(spec, max_tokens=JUDGE_TOKENS))


def _pairwise(run_dir: Path, pair: str, judge: str | None, repeats: int, limit: int | None) -> None:
    """``eval --report RUN_DIR --pairwise A,B``: the pairwise judge over the run's answers, its
    table printed (method names are data) and its verdicts written beside the run."""
    from rag_graphs.eval.pairwise import (
        PAIRWISE_TOKENS,
        compare_methods,
        pairwise_table,
        parse_pair,
        write_pairwise,
    )
    from rag_graphs.eval.rows import CONFIG, read_config
    from rag_graphs.llm.models import load_chat_model

    try:
        a, b = parse_pair(pair)
        if not judge and (run_dir / CONFIG).is_file():
            judge = read_config(run_dir).get("judge")
        if not judge:
            _fail("--pairwise needs a judge model: --judge SPEC (a capable model)")
        model = load_chat_model(judge, max_tokens=PAIRWISE_TOKENS)
        result = compare_methods(run_dir, a, b, model, repeats=repeats, limit=limit, judge_name=judge)
        path = write_pairwise(run_dir, result)
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        _fail(str(exc))
    table = pairwise_table(result)
    console.print("\n".join(safe(line) for line in table.splitlines()), highlight=False, soft_wrap=True)
    skipped = f", {len(result.skipped)} skipped (no answer from one)" if result.skipped else ""
    console.print(f"{result.questions} questions{skipped}; [bold]pairwise[/]: {safe(path)}")


@app.command("mine-demos")
def mine_demos(
    dataset: Annotated[Path, typer.Option(help="a labelled set (../shared/eval layout or JSONL)")],
    out: Annotated[Path, typer.Option(help="the demonstrations JSONL to write")] = Path(
        "demonstrations.jsonl"
    ),
    offset: Annotated[int, typer.Option(help="skip this many questions (keep your eval sample out)")] = 100,
    limit: Annotated[int, typer.Option(help="candidate questions to try")] = 50,
    keep: Annotated[int, typer.Option(help="demonstrations to keep")] = 8,
    model: ModelOpt = None,
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
