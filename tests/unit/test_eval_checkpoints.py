"""``evaluate(checkpoints=...)``: every run checkpoints on a thread of the run folder's ``run_id``,
so a resumed evaluation finishes the runs a killed one had in flight without asking them again."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from rag_graphs.eval import EvalOptions, evaluate, read_rows
from rag_graphs.eval.rows import CONFIG, ROWS


def test_runs_checkpoint_on_threads_of_the_run_folder_and_a_resume_replays_them(
    tiny: Path, tmp_path: Path, make_context
) -> None:
    db, run_dir, store = tmp_path / "checkpoints.sqlite", tmp_path / "run", str(tmp_path / "eval.db")
    model = GenericFakeChatModel(messages=iter([AIMessage(content="Korvik [1].")] * 3))
    ctx = make_context(chat_model=model, search_mode="hybrid", k=2)
    evaluate(
        tiny,
        ["naive"],
        context=ctx,
        options=EvalOptions(run_dir=run_dir, eval_store=store, progress=False, checkpoints=db),
    )
    run_id = json.loads((run_dir / CONFIG).read_text())["run_id"]
    with sqlite3.connect(db) as conn:
        threads = {t for (t,) in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}
    assert threads == {f"eval-{run_id}-naive-q{i}" for i in range(3)}
    first = read_rows(run_dir)

    # As if the process had died after q1's run finished but before its row was written.
    kept = [line for line in (run_dir / ROWS).read_text().splitlines() if json.loads(line)["id"] != "q1"]
    (run_dir / ROWS).write_text("\n".join(kept) + "\n")
    idle = GenericFakeChatModel(messages=iter([]))  # the same model name; any call would fail the run
    ctx = make_context(chat_model=idle, search_mode="hybrid", k=2)
    evaluate(
        tiny,
        ["naive"],
        context=ctx,
        options=EvalOptions(run_dir=run_dir, eval_store=store, progress=False, checkpoints=db),
    )
    assert json.loads((run_dir / CONFIG).read_text())["run_id"] == run_id
    again = {row["id"]: row for row in read_rows(run_dir)}
    assert again["q1"]["error"] is None and len(again) == 3
    before = next(r for r in first if r["id"] == "q1")
    assert again["q1"]["prediction"] == before["prediction"] == "Korvik [1]."
    assert again["q1"]["llm_calls"] == 1  # the stored run's usage
