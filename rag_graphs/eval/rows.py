"""What a run directory holds: ``rows.jsonl`` (one result row per method and question, appended
as each run completes) and ``config.json`` (what was run), read back for reports and resumes.

A damaged line is skipped and named, never fatal: an interrupted or hand-edited run still
reports, and a resume runs the skipped question again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from rag_graphs.eval.metrics import RANKS
from rag_graphs.support.locks import exclusive
from rag_graphs.support.terminal import visible
from rag_graphs.text.jsonl import existing_path, read_json_object

log = logging.getLogger(__name__)
ROWS, CONFIG, LOCK = "rows.jsonl", "config.json", ".lock"
ANSWER_METRICS = ("em", "f1", "contains")
"""The row fields that score the answer (None in retrieval-only rows)."""


ROW_NUMBERS = (
    "seconds",
    "model_seconds",
    "search_seconds",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "retrievals",
)
"""Numeric fields of a row that the report sums (with ``method`` and ``id``, what a row must have)."""
SCORES = (*ANSWER_METRICS, "recall", *(f"recall_at_{k}" for k in RANKS))
"""A row's quality scores: a number, or None where there is none (no gold, retrieval only)."""
JUDGED = "judged"
"""A row's judge and user evaluator scores, key -> number or None."""
_NAMED = 5
"""Scores named in the warning about non-numeric ones at most (the rest are counted)."""


def row_reader(row: dict) -> str:
    """The reader that answered ``row`` (``RagContext.reader``, resolved): rows written before
    the extract reader existed were all generated."""
    return str(row.get("reader") or "generate")


def _row_problem(row: object) -> str | None:
    """Why a parsed line is not a result row (None: it is one)."""
    if not isinstance(row, dict):
        return f"expected a JSON object, got {type(row).__name__}"
    if not isinstance(row.get("method"), str) or not isinstance(row.get("id"), str | int):
        return "no 'method' and 'id'"
    bad = [k for k in ROW_NUMBERS if isinstance(row.get(k), bool) or not isinstance(row.get(k), int | float)]
    return f"fields {', '.join(bad)} are not numbers" if bad else None


def read_rows(run_dir: str | Path) -> list[dict]:
    """The complete rows of a run. A line that is not a row (cut off by an interruption, or
    damaged: ``{}``, ``[1, 2]``, not JSON) is skipped with a warning naming the file and line,
    so a report or a resume runs on the rest (a resume runs the skipped question again)."""
    path = Path(run_dir).expanduser() / ROWS
    if not path.is_file():
        return []
    rows = []
    not_numbers: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problem: str | None = f"not valid JSON ({exc.msg})"
        else:
            problem = _row_problem(row)
        if problem:
            log.warning("%s:%d: skipped, not a result row: %s", path, number, problem)
            continue
        not_numbers += [f"{name} (line {number})" for name in _scores_as_numbers(row)]
        rows.append(row)
    if not_numbers:
        more = f" and {len(not_numbers) - _NAMED} more" if len(not_numbers) > _NAMED else ""
        log.warning(
            "%s: %d score(s) are not numbers and are read as missing: %s%s",
            path,
            len(not_numbers),
            ", ".join(not_numbers[:_NAMED]),
            more,
        )
    return rows


def _number(value: object) -> float | None:
    """``value`` as a finite float; None when it is not a number (a bool, a string, NaN...)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _scores_as_numbers(row: dict) -> list[str]:
    """Set every score of ``row`` that is not a number to None (missing, as a score the run
    never had); return the names of those it changed (shown escaped: keys are data)."""
    changed = []
    for name in SCORES:
        value = row.get(name)
        if value is not None and (number := _number(value)) != value:
            row[name] = number
            changed += [name] if number is None else []
    judged = row.get(JUDGED)
    if judged is not None and not isinstance(judged, dict):
        row[JUDGED], changed = {}, [*changed, JUDGED]
    for key, value in (row.get(JUDGED) or {}).items():
        if value is not None and _number(value) is None:
            row[JUDGED][key] = None
            changed.append(f"{JUDGED}.{visible(key)}")
    return changed


def read_config(run_dir: str | Path) -> dict:
    """The ``config.json`` of an existing run directory (what ``--resume`` continues).

    Raises:
        FileNotFoundError: no folder at ``run_dir``, or no ``config.json`` in it.
        ValueError: ``run_dir`` is a file, or its ``config.json`` is not a JSON object.
    """
    folder = existing_path(run_dir, "dir", "run directory")
    return read_json_object(existing_path(folder / CONFIG, "file", f"run configuration of {folder}"))


def _run_folder(run_dir: str | Path | None, runs_root: str | Path, name: str) -> Path:
    """The run directory, resolved; a new one under ``runs_root`` when none is given."""
    if not run_dir:
        return _new_run_folder(
            Path(runs_root).expanduser().resolve(), f"{name}-{datetime.now():%Y%m%d-%H%M%S}"
        )
    folder = Path(run_dir).expanduser().resolve()
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"run directory must be a folder, {folder} is a file")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _new_run_folder(root: Path, stem: str) -> Path:
    """A folder under ``root`` that this call created: ``stem``, else ``stem-2``, ``stem-3``...

    ``mkdir`` without ``exist_ok`` is atomic, so two evaluations started in the same
    second (same name) never share a folder and append to one ``rows.jsonl``.
    """
    root.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10_000):
        folder = root / (stem if n == 1 else f"{stem}-{n}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise ValueError(f"{root}: 10,000 run directories named {stem}*; choose another --out")


class RunFolderBusy(RuntimeError):
    """Another evaluation holds the run folder."""


@contextlib.contextmanager
def run_folder_lock(folder: Path) -> Iterator[None]:
    """Hold ``folder``'s writer lock for the block: one evaluation writes a run folder at a time.

    Two ``eval --resume`` of one folder each read the rows done, then each ran the rest and
    appended it (11 rows for 6 questions). The lock is ``flock`` on ``<folder>/.lock``: per
    open file, so a second evaluation in this process is refused too, and released by the
    kernel when its holder exits, even by ``kill -9``, so a killed run never leaves it held.

    Raises:
        RunFolderBusy: another evaluation holds it (one line naming the folder).
    """
    lock = folder / LOCK
    busy = RunFolderBusy(
        f"run folder {folder} is being written by another evaluation right now (lock {lock}); "
        "wait for it to end, then --resume it, or choose another folder"
    )
    with exclusive(lock, lambda: busy):
        yield


def _repair_tail(path: Path) -> None:
    """Drop a partial last line (the process died mid-write) so appends start on a fresh line."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        path.write_bytes(data[: data.rfind(b"\n") + 1])
