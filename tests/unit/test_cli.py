"""The command line: live streaming of steps, the methods list."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from rag_graphs.catalog import METHODS
from rag_graphs.cli import ask as cli

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


def test_a_thread_id_continues_a_failed_run_from_its_failed_step(loaded, make_context, tmp_path):
    from rag_graphs.nodes.failures import RunFailed
    from tests.unit.test_faults import StatusError, scripted

    db = tmp_path / "checkpoints.sqlite"
    broken = scripted("Velmora Institute founder", "Ilsa Brandt founded it.", StatusError(401, "bad key"))
    with pytest.raises(RunFailed, match="next_query failed"):
        cli._run("fixed_step", QUESTION, make_context(chat_model=broken, k=1), None, thread=("t1", db))
    fixed = scripted("Ilsa Brandt birthplace", "She was born in Korvik.", "Korvik [1].")
    out = cli._run("fixed_step", QUESTION, make_context(chat_model=fixed, k=1), None, thread=("t1", db))
    assert len(fixed.calls) == 3  # next_query, intermediate, generate: nothing before the failure re-ran
    assert out["answer"] == "Korvik [1]." and out["citations"]
    assert [s["node"] for s in out["steps"] if s["kind"] != "error"] == [
        "first_query",
        "retrieve",
        "intermediate",
        "next_query",
        "retrieve",
        "intermediate",
        "generate",
    ]
    idle = scripted(AssertionError("a finished thread must not call the model"))
    again = cli._run("fixed_step", QUESTION, make_context(chat_model=idle, k=1), None, thread=("t1", db))
    assert again["answer"] == out["answer"] and not idle.calls
    replies = scripted("q1", "a1", "q2", "a2", "Elsewhere [1].")
    other = cli._run(  # a finished thread takes another question, run as on a new thread
        "fixed_step", "Another question?", make_context(chat_model=replies, k=1), None, thread=("t1", db)
    )
    assert other["answer"] == "Elsewhere [1]." and len(replies.calls) == 5
    assert [s["node"] for s in other["steps"]][0] == "first_query"


def test_json_output_of_a_resumed_thread_stays_one_json_document(loaded, make_context, tmp_path, capsys):
    import json

    db = tmp_path / "checkpoints.sqlite"
    cli._run("naive", QUESTION, make_context("Korvik [1].", k=1), as_json=True, thread=("j", db))
    capsys.readouterr()
    cli._run("naive", QUESTION, make_context(k=1), as_json=True, thread=("j", db))
    printed = capsys.readouterr()
    assert json.loads(printed.out)["answer"] == "Korvik [1]."  # the notice is not mixed into stdout
    assert "thread 'j' finished earlier" in printed.err


class _Index:
    """The three ``ChunkIndex`` calls ``delete_sources`` makes, on a dict of source -> chunks."""

    def __init__(self, chunks: dict[str, int]) -> None:
        self.chunks, self.flushed = dict(chunks), False

    def sources(self) -> dict[str, dict[str, int]]:
        return {source: {"text": n} for source, n in self.chunks.items()}

    def delete_source(self, source: str) -> int:
        return self.chunks.pop(source, 0)

    def flush(self) -> None:
        self.flushed = True


def test_delete_takes_a_file_or_every_file_under_a_folder_or_a_url(tmp_path):
    from rag_graphs.search.sources import Removed, delete_sources

    docs = tmp_path.resolve() / "docs"
    index = _Index({f"{docs}/a.md": 3, f"{docs}/sub/b.pdf": 2, f"{docs}-old/c.md": 1, "https://x.org/p": 4})
    assert delete_sources(index, [docs]) == [Removed(docs, (f"{docs}/a.md", f"{docs}/sub/b.pdf"), 5)]
    assert index.flushed and f"{docs}-old/c.md" in index.chunks  # a sibling sharing the prefix stays
    assert delete_sources(index, ["https://x.org/p"])[0].chunks == 4


def test_delete_refuses_an_unknown_target_before_removing_anything(tmp_path):
    from rag_graphs.search.sources import delete_sources

    docs = tmp_path.resolve() / "docs"
    index = _Index({f"{docs}/a.md": 3})
    with pytest.raises(ValueError, match=r"nope\.md: not an indexed source"):
        delete_sources(index, [docs / "a.md", docs / "nope.md"])
    assert index.chunks == {f"{docs}/a.md": 3} and not index.flushed


def test_source_key_makes_paths_absolute_and_keeps_urls(tmp_path, monkeypatch):
    from rag_graphs.search.sources import source_key

    monkeypatch.chdir(tmp_path)
    assert source_key("docs/a.md") == str(tmp_path.resolve() / "docs" / "a.md")
    assert source_key("https://x.org/a//b") == "https://x.org/a//b"


def test_ask_prints_how_the_run_ended(loaded, make_context):
    from rag_graphs.cli.ask import _outcome_line

    with cli.console.capture() as captured:
        cli._run("naive", QUESTION, make_context("Korvik [1]."), as_json=False)
    assert "outcome: answered · stop reason: " in captured.get()
    assert _outcome_line({"outcome": "answered", "stop_reason": "enough"}) == (
        "[green]outcome: answered · stop reason: enough[/]"
    )
    line = _outcome_line({"outcome": "unreliable", "stop_reason": "never grounded", "confidence": "low"})
    assert line.startswith("[red]") and "confidence: low" in line and "never grounded" in line
    assert "outcome: unknown" in _outcome_line({})  # a failed run's partial result has no outcome


class Captured(BaseException):
    """Stops a command where it builds its context (no command, nor the runner, catches it)."""


def test_ask_and_eval_take_search_mode_max_hops_and_embeddings(monkeypatch, tmp_path):
    from rag_graphs.cli import app, evaluate

    seen: list[dict] = []

    def capture(store, collection, **overrides):
        seen.append(overrides)
        raise Captured

    monkeypatch.setattr(cli, "_context", capture)
    monkeypatch.setattr(evaluate, "_context", capture)
    flags = ["--search-mode", "graph", "--max-hops", "2", "--embeddings", "fake:8"]
    with pytest.raises(Captured):
        CliRunner().invoke(app, ["ask", "Where?", *flags])
    data = tmp_path / "q.jsonl"
    data.write_text('{"question": "Where?", "answer": "Korvik"}\n')
    with pytest.raises(Captured):
        CliRunner().invoke(app, ["eval", "--dataset", str(data), *flags])
    assert len(seen) == 2
    for overrides in seen:
        assert (overrides["search_mode"], overrides["max_hops"], overrides["embeddings"]) == (
            "graph",
            2,
            "fake:8",
        )
    assert (
        CliRunner().invoke(app, ["ask", "Where?", "--max-hops", "0"]).exit_code == 2
    )  # refused by the option


def test_version_prints_the_installed_version():
    from importlib.metadata import version

    from rag_graphs.cli import app

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"rag-graphs {version('rag-graphs')}"
