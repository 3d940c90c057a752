"""Bounds and counts (issue 30, part A): every setting that sizes work has a range checked where it
is parsed, with an error naming it; a run past LangGraph's recursion limit is ``RunFailed``; the
ingest report counts what the store gained."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from rag_graphs import cli
from rag_graphs.config.context import RagContext
from rag_graphs.config.fields import MAX_LOOP
from rag_graphs.eval.datasets import load_dataset
from rag_graphs.ingestion import ingest
from rag_graphs.ingestion.options import IngestOptions, megabytes
from rag_graphs.nodes.failures import RunFailed
from rag_graphs.run import run


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli.app, list(args))
    return result.exit_code, " ".join(result.output.split())


@pytest.mark.parametrize("spec", ["neighbours:20000000", "neighbours:101"])
def test_a_huge_expansion_window_is_refused_naming_its_range(spec, monkeypatch):
    with pytest.raises(ValidationError, match="RagContext.expand=.*N from 1 to 100"):
        RagContext(expand=spec)
    monkeypatch.setenv("RAG_GRAPHS_EXPAND", spec)
    with pytest.raises(ValidationError, match="RAG_GRAPHS_EXPAND"):
        RagContext()


@pytest.mark.parametrize("name", ["max_hops", "fixed_hops", "iterdrag_iterations", "max_steps"])
def test_loop_budgets_have_an_upper_bound(name):
    assert getattr(RagContext(**{name: MAX_LOOP}), name) == MAX_LOOP
    with pytest.raises(ValidationError, match=f"RagContext.{name}=1000000.*less than or equal to {MAX_LOOP}"):
        RagContext(**{name: 1_000_000})


def test_a_run_past_the_recursion_limit_is_run_failed(make_context, loaded):
    ctx = make_context("Korvik.", "Korvik.", "Korvik.")
    with pytest.raises(RunFailed, match="recursion limit") as caught:
        run("naive", "Where was Ilsa Brandt born?", ctx, config={"recursion_limit": 1})
    assert caught.value.result["steps"][-1]["kind"] == "error"
    partial = run(
        "naive", "Where was Ilsa Brandt born?", ctx, config={"recursion_limit": 1}, raise_on_failure=False
    )
    assert "recursion limit" in partial["error"]


@pytest.mark.parametrize("timeout", [math.nan, math.inf, -5, 0])
def test_a_timeout_that_is_no_guard_is_refused(timeout):
    with pytest.raises(ValueError, match="timeout=.*finite number of seconds > 0"):
        IngestOptions(timeout=timeout)
    assert IngestOptions(timeout=None).timeout is None  # no limit stays an explicit choice


@pytest.mark.parametrize("size", [-1, 0, 1.5, True])
def test_a_file_size_limit_that_is_none_is_refused(size):
    with pytest.raises(ValueError, match="max_file_bytes=.*>= 1"):
        IngestOptions(max_file_bytes=size)


@pytest.mark.parametrize("mb", ["-1", "nan", "inf", "0"])
def test_the_cli_refuses_a_bad_max_file_mb_naming_it(tmp_path, mb):
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    code, output = _invoke(
        "ingest", str(tmp_path / "a.md"), "--store", str(tmp_path / "s.db"), "--max-file-mb", mb
    )
    assert code == 1 and "--max-file-mb" in output and "Traceback" not in output, output
    assert megabytes(0.5) == 512 * 1024


@pytest.mark.parametrize("seconds", ["nan", "-5"])
def test_the_cli_refuses_a_bad_timeout_naming_it(tmp_path, seconds):
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    code, output = _invoke(
        "ingest", str(tmp_path / "a.md"), "--store", str(tmp_path / "s.db"), "--timeout", seconds
    )
    assert code == 1 and "timeout" in output and "finite number of seconds" in output, output


@pytest.mark.parametrize("bad", [{"limit": -1}, {"limit": 0}, {"sample": -1}])
def test_eval_limit_and_sample_below_one_are_refused(tiny, bad):
    ds = load_dataset(tiny)
    assert len(ds.select(limit=2)) == 2 and len(ds.select()) == 3
    (name,) = bad
    with pytest.raises(ValueError, match=f"{name}=-?[0-9]+: expected a whole number of questions >= 1"):
        ds.select(**bad)


def test_identical_rows_are_counted_as_what_the_store_gained(index, tmp_path: Path):
    table = tmp_path / "same.csv"
    table.write_text("name,town\n" + "Ilsa Brandt,Korvik\n" * 3000)
    report = ingest([table], index=index, options=IngestOptions(progress=False))
    stored = index.count()
    assert report.added == report.chunks == stored  # before: 125 new, 1 stored
    (result,) = report.files
    assert result.merged > 0
    assert f"{stored} new" in report.summary() and "identical chunk(s) stored once" in report.summary()
    again = ingest([table], index=index, options=IngestOptions(progress=False))
    assert again.added == 0 and again.chunks == stored
