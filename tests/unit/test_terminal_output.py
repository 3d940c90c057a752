"""Data reaches the terminal as text, never as markup or control sequences (issue 30, part B).

A chunk, answer or question holding ``[/]`` used to end ``ask`` with Rich's
``MarkupError``; file names with ANSI/OSC escapes, C1 controls or U+202E reached
the terminal raw in ``ingest`` and ``sources``; a newline in a file name forged
a second ``FAILED`` line in the ingest report.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from rag_graphs.cli import ask as cli  # ask looks up _context here
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.support.terminal import safe, visible

HOSTILE = {
    "markup": "x [/] [bold red]y[/bold red] [link=http://evil]z[/link] \\",
    "ansi": "\x1b[31mred\x1b[0m",
    "osc": "\x1b]0;pwned title\x07",
    "c1": "\x9b31m",
    "bidi": "fdp.\u202eexe",
    "newline": "a\nFAILED forged.pdf: nothing",
}
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\u2066")
"""Characters no output line may hold."""


def _clean(output: str) -> None:
    for char in RAW:
        assert char not in output, f"{char!r} reached the terminal: {output!r}"
    assert "MarkupError" not in output


@pytest.mark.parametrize("text", list(HOSTILE.values()), ids=list(HOSTILE))
def test_visible_keeps_text_on_one_line_and_safe_escapes_markup(text):
    from rich.console import Console

    shown = visible(text)
    assert "\n" not in shown and not any(c in shown for c in RAW)
    console = Console(record=True, width=500)
    console.print(f"[dim]{safe(text)}[/dim]")  # never a MarkupError; the text comes out as written
    assert console.export_text().rstrip("\n") == shown


def test_ask_prints_hostile_chunk_question_and_answer_as_text(tmp_path, index, make_context, monkeypatch):
    body = " ".join(HOSTILE.values())
    (tmp_path / "note.md").write_text(f"# Harbour [/]\n\nThe keeper is Ansel. {body}\n")
    ingest([tmp_path / "note.md"], index=index, options=IngestOptions(progress=False))
    answer = f"Ansel {body} [1]."
    monkeypatch.setattr(cli, "_context", lambda *a, **kw: make_context(answer, k=1))
    question = f"Who keeps the harbour [/]? {HOSTILE['osc']}"
    for extra in ([], ["--stream"]):
        result = CliRunner().invoke(cli.app, ["ask", question, *extra])
        assert result.exit_code == 0, result.output
        _clean(result.output)
        assert "Ansel x [/] [bold red]y[/bold red]" in result.output  # the answer, as written
        assert "\\x1b]0;pwned title\\x07" in result.output
        assert "Harbour [/]" in result.output or "keeper is Ansel" in result.output  # the quote


def test_ingest_and_sources_show_hostile_file_names_escaped(tmp_path, fake_embeddings, monkeypatch):
    folder = tmp_path / "docs"
    folder.mkdir()
    names = [f"{kind}-{text.replace('/', '_')}" for kind, text in HOSTILE.items()]
    for name in names:
        (folder / f"{name}.md").write_text(f"# {name}\n\nThe glider surfaced at dawn near {name}.\n")
        (folder / f"{name}.pdf").write_bytes(b"not a pdf at all\x00\x01")  # fails: a FAILED line
    monkeypatch.setattr("rag_graphs.ingestion.pipeline.load_embeddings", lambda spec: fake_embeddings)
    monkeypatch.setattr("rag_graphs.search.retrieval.embeddings_for", lambda ctx: fake_embeddings)
    store = str(tmp_path / "cli.db")
    result = CliRunner().invoke(cli.app, ["ingest", str(folder), "--store", store, "--timeout", "0"])
    _clean(result.output)
    lines = result.output.splitlines()
    assert sum(line.startswith("  FAILED") for line in lines) == len(names), result.output
    assert not any(line.startswith("FAILED forged") for line in lines)  # no forged line
    assert f"{len(names)} file(s) ingested, {len(names)} failed" in result.output
    assert "newline-a\\nFAILED forged.pdf" in result.output

    result = CliRunner().invoke(cli.app, ["sources", "--store", store, "--collection", "rag_graphs"])
    assert result.exit_code == 0, result.output
    _clean(result.output)
    flat = "".join(result.output.split())
    assert "bidi-fdp.\\u202eexe.md" in flat and "markup-x[_][boldred]" in flat, result.output
