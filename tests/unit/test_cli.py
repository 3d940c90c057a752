"""The command line: live streaming of steps, the methods list."""

from __future__ import annotations

from typer.testing import CliRunner

from rag_graphs import cli
from rag_graphs.methods import METHODS

QUESTION = "In which town was the founder of the Velmora Institute born?"


def test_stream_prints_every_step_and_event_as_it_happens(loaded, make_context, monkeypatch):
    ctx = make_context(
        "Velmora Institute founder",
        "Ilsa Brandt founded it.",
        "Ilsa Brandt birthplace",
        "She was born in Korvik.",
        "Korvik [1].",
        k=1,
    )
    with cli.console.capture() as captured:
        out = cli._run("fixed_step", QUESTION, ctx, as_json=None, live=True)
    text = captured.get()
    lines = [line for line in text.splitlines() if line[:1].isdigit()]
    assert len(lines) == len(out["steps"])  # one live line per reasoning step, numbered in order
    assert lines[1].startswith("2. retrieve retrieve: Velmora Institute founder -> 1 passages")
    assert "· retrieve start query='Velmora Institute founder'" in text
    assert lines[-1].startswith(f"{len(lines)}. generate generate: Korvik [1].")


def test_without_stream_only_the_result_is_printed(loaded, make_context):
    ctx = make_context("Korvik [1].", k=1)
    with cli.console.capture() as captured:
        cli._run("naive", QUESTION, ctx, as_json=None)
    assert captured.get() == ""


def test_methods_command_lists_every_method():
    result = CliRunner().invoke(cli.app, ["methods"])
    assert result.exit_code == 0
    rows = [line.split()[0] for line in result.output.strip().splitlines() if not line.startswith(" ")]
    assert rows == list(METHODS)
