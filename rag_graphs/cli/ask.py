"""``rag-graphs ask``: one method on one question, its result printed (or streamed, or JSON).

A run that stops for a person (``--interrupt``, ``RagContext.interrupts``) asks on a terminal and
goes on with the answer; without one (stdin not a TTY, or ``--no-interactive``) it prints what it
asks (JSON under ``--json``) and how to resume, and exits with ``EXIT_WAITING``.
"""

from __future__ import annotations

import json
import shlex
import sys
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from rag_graphs.cli.shared import (
    CollOpt,
    ModelOpt,
    StoreOpt,
    _context,
    _fail,
    app,
    console,
    err,
    with_search_options,
)
from rag_graphs.config.threads import DEFAULT_CHECKPOINTS
from rag_graphs.search.sources import source_key
from rag_graphs.support.terminal import safe

if TYPE_CHECKING:
    from rag_graphs.config.context import RagContext
    from rag_graphs.run import Progress, RunEvent

EXIT_WAITING = 3
"""The exit code of a run that waits for a person's answer (1: an error; 2: a usage error)."""
_ON_TERMINAL = {
    "plan": "Enter or 'approve' searches this plan; 'reject' searches the question alone; "
    "or type the sub-questions to search, separated by ';'",
    "web_search": "Enter or 'approve' searches the web; 'decline' goes on without it",
    "clarify": "type the question more clearly, or Enter / 'go on' to keep it",
}


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
    thread: tuple[str, str | Path] | None = None,
    resume: Any = None,
) -> dict:
    """Run one method (``rag_graphs.run.stream``) with a live status line; print the result unless
    ``as_json`` is None.

    With ``live``, every node event and every reasoning step is printed the moment
    it happens, not only at the end. With ``thread`` (thread id, checkpoints file or URI), every
    step is checkpointed: a run of that thread that was killed or failed continues
    from its last completed step, and ``resume`` (not None) answers the run waiting on it.
    A run that waits for a person's answer (its ``interrupts``) is returned unprinted.
    """
    from rag_graphs.run import stream

    thread_id, checkpoints = thread or (None, DEFAULT_CHECKPOINTS)
    answer = {} if resume is None else {"resume": resume}
    events = stream(method, question, ctx, thread_id=thread_id, checkpoints=checkpoints, **answer)
    result = _follow(events, method, live, notices=err if as_json else console)
    if result.get("interrupts"):
        return result
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
    from rag_graphs.run import Finished, Progress, Resumed, StepEvent

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
            elif isinstance(event, StepEvent) and live:
                console.print(_step_line(event.number, event.step), highlight=False)
            elif isinstance(event, Finished):
                result = event.result
    return result


def parse_answer(kind: str, text: str) -> Any:
    """A typed answer as the run reads it: JSON when it is JSON (``true``, ``["q1", "q2"]``), a
    plan's sub-questions when separated by ``;``, else the text (``approve``, a question...)."""
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    if isinstance(value, str) and kind == "plan" and ";" in value:
        return [part.strip() for part in value.split(";") if part.strip()]
    return value if not isinstance(value, str) else (value.strip() or "approve")


def _answer_for(asked: dict, typed: str | None, talk: bool) -> Any:
    """The answer to what the run asks: ``--resume``'s, else typed here when ``talk``, else None."""
    if typed is not None:
        return parse_answer(str(asked.get("kind")), typed)
    return _ask_here(asked) if talk else None


def _ask_here(asked: dict) -> Any:
    """Show what the run asks on the terminal; the answer typed."""
    kind = str(asked.get("kind"))
    console.rule(f"[bold]waiting for you: {safe(kind)}")
    for key, value in asked.items():
        if key not in ("kind", "how_to_resume"):
            console.print(
                f"[bold]{safe(key)}[/]: {safe(json.dumps(value, ensure_ascii=False))}", highlight=False
            )
    console.print(f"[dim]{safe(_ON_TERMINAL.get(kind, str(asked.get('how_to_resume', ''))))}[/]")
    return parse_answer(kind, typer.prompt("your answer", default="", show_default=False))


def _waiting(asked: list[dict], method: str, question: str, thread_id: str, as_json: bool) -> None:
    """Print what the run waits for and how to resume it; exit with ``EXIT_WAITING``."""
    again = f"rag-graphs ask {shlex.quote(question)} -m {method} --thread-id {thread_id} --resume ANSWER"
    if as_json:
        typer.echo(json.dumps({"thread_id": thread_id, "interrupts": asked, "resume_with": again}, indent=2))
    else:
        console.rule("[bold]waiting for your answer")
        console.print(safe(json.dumps(asked, indent=2, ensure_ascii=False)), highlight=False)
    err.print(f"the run waits on thread {safe(thread_id)}; resume it with:\n  {safe(again)}", soft_wrap=True)
    raise SystemExit(EXIT_WAITING)


@app.command()
@with_search_options
def ask(
    question: Annotated[str, typer.Argument(help="the question")],
    method: Annotated[
        str, typer.Option("--method", "-m", help="method (see `rag-graphs methods`)")
    ] = "naive",
    store: StoreOpt = None,
    collection: CollOpt = None,
    k: Annotated[int | None, typer.Option(help="chunks per retrieval [env RAG_GRAPHS_K]")] = None,
    model: ModelOpt = None,
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
        str,  # not Path: it folds a postgresql:// URI's '//'
        typer.Option(help="SQLite file, or postgresql:// URI, of --thread-id checkpoints"),
    ] = str(DEFAULT_CHECKPOINTS),
    interrupt: Annotated[
        list[str] | None,
        typer.Option(
            "--interrupt",
            help="stop for your answer at plan, web_search, clarify (repeatable) [env RAG_GRAPHS_INTERRUPTS]",
        ),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            help="your answer to the run waiting on --thread-id: approve, decline, 'q1; q2' (a plan), "
            "a clarified question, or JSON"
        ),
    ] = None,
    interactive: Annotated[
        bool | None,
        typer.Option(
            "--interactive/--no-interactive", help="ask for answers here (default: when stdin is a terminal)"
        ),
    ] = None,
    *,
    search: dict[str, Any],
) -> None:
    """Answer a question with one method; print the answer, citations and steps."""
    from rag_graphs.nodes.failures import RunFailed
    from rag_graphs.nodes.fresh import check_question
    from rag_graphs.store import StoreLockedError

    if not question.strip():
        _fail("the question is empty: ask something, e.g. rag-graphs ask 'Where was Ilsa Brandt born?'")
    try:
        check_question(question)  # before any model or store is loaded
    except ValueError as exc:
        _fail(str(exc))
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
            interrupts=interrupt or None,
            **search,
        )
        if ctx.interrupts and not thread_id:  # a run that may wait needs a thread to resume on
            thread_id = f"ask-{uuid.uuid4().hex[:8]}"
            err.print(f"[dim]thread {thread_id} (--interrupt needs a thread to resume on)[/]")
        thread = (thread_id, checkpoints) if thread_id else None
        talk = sys.stdin.isatty() if interactive is None else interactive
        answer = None
        while True:
            live = stream and not as_json
            result = _run(method, question, ctx, as_json, live=live, thread=thread, resume=answer)
            if not result.get("interrupts"):
                return
            answer, resume = _answer_for(result["interrupts"][0], resume, talk and not as_json), None
            if answer is None:
                _waiting(result["interrupts"], method, question, str(thread_id), as_json)
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
