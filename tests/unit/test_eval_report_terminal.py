"""``eval --report`` on a shared run folder: what rows say is data, never terminal markup or escapes,
and a score that is not a number is missing (said once), never a traceback."""

from __future__ import annotations

import json
import logging

from typer.testing import CliRunner

from rag_graphs.cli import app
from rag_graphs.eval import markdown_table, read_rows, summarize

ESCAPE = "\x1b]0;owned\x07\x1b[2J"  # set the terminal title, clear the screen


def _row(method: str, question: str, **fields) -> dict:
    row = {
        "method": method,
        "id": question,
        "question": "Where?",
        "prediction": "Korvik",
        "em": 1.0,
        "f1": 1.0,
        "contains": 1.0,
        "recall": 0.5,
        "recall_at_2": 0.5,
        "recall_at_5": 1.0,
        "hops": 2,
        "type": "bridge",
        "seconds": 1.0,
        "model_seconds": 0.5,
        "search_seconds": 0.25,
        "llm_calls": 1,
        "prompt_tokens": 10,
        "completion_tokens": 2,
        "retrievals": 1,
        "error": None,
    }
    return row | fields


def _write(folder, rows):
    folder.mkdir()
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = {"dataset_name": f"set{ESCAPE}[bold]", "setting": "open", "k": 5, "chat_model": "[/]"}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_report_prints_hostile_method_names_as_text(tmp_path):
    methods = ["[/]naive", f"react{ESCAPE}", "m$\\frac{$|x"]  # markup, escapes, matplotlib math, a cell
    run = _write(tmp_path / "run", [_row(m, "q0") for m in methods])
    result = CliRunner().invoke(app, ["eval", "--report", str(run)])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "[/]naive" in result.output  # shown as written, not read as markup
    assert "react\\x1b]0;owned\\x07\\x1b[2J" in result.output  # escapes shown, not executed
    report = (run / "report.md").read_text()
    assert "\x1b" not in report and "[/]naive" in report and "| m$\\frac{$\\|x |" in report


def test_non_numeric_scores_are_missing_and_said_once(tmp_path, caplog):
    rows = [
        _row("naive", "q0", f1="high", recall=[1], judged={"grounded": "yes", "answer_correct": 1.0}),
        _row("naive", "q1", f1=0.5, em=None, recall_at_5={"x": 1}, judged=["not", "a", "dict"]),
        _row("naive", "q2", f1=float("nan"), contains=True),
    ]
    run = _write(tmp_path / "run", rows)
    with caplog.at_level(logging.WARNING, logger="rag_graphs.eval.rows"):
        read = read_rows(run)
    warnings = [r.getMessage() for r in caplog.records if "not numbers" in r.getMessage()]
    assert len(warnings) == 1, warnings  # said once for the file, not once per field
    assert "rows.jsonl" in warnings[0] and "f1" in warnings[0] and "judged.grounded" in warnings[0]
    (summary,) = summarize(read)
    assert summary.quality["f1"][0] == 0.5  # only q1's f1 is a number
    assert summary.quality["judge:answer_correct"][0] == 1.0
    table = markdown_table([summary])
    assert "| naive | 3 |" in table
    result = CliRunner().invoke(app, ["eval", "--report", str(run)])
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
