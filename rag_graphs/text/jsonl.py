"""JSONL reading with errors that name the file, line and field (datasets, demonstrations),
and the one check every path a user gives goes through."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Literal


def existing_path(path: str | Path, kind: Literal["file", "dir"], what: str) -> Path:
    """``path`` with ``~`` expanded and resolved, checked to exist and to be a file or a folder.

    Resolving first means errors, caches and stored configs all name the one
    absolute path, however the user spelled it (``~/x``, ``../x``, a symlink).

    Raises:
        FileNotFoundError: nothing at ``path`` (the message names ``what`` and the path).
        ValueError: a folder where a file is expected, or the other way round.
    """
    resolved = Path(path).expanduser().resolve()
    if not resolved.exists():
        raise FileNotFoundError(f"{what} not found: {resolved}")
    if kind == "file" and not resolved.is_file():
        raise ValueError(f"{what} must be a file, {resolved} is a folder")
    if kind == "dir" and not resolved.is_dir():
        raise ValueError(f"{what} must be a folder, {resolved} is a file")
    return resolved


def read_json_object(path: Path) -> dict:
    """A JSON file holding one object (``meta.json``, ``config.json``); malformed, it fails naming it."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return value


def read_jsonl(path: Path) -> Iterator[tuple[str, dict]]:
    """``(file:line, object)`` for every non-empty line.

    Lines are decoded one at a time, so a file that is not UTF-8 text is also
    reported by line instead of as a bare ``UnicodeDecodeError``.

    Raises:
        ValueError: a line is not UTF-8, not JSON, or not a JSON object.
    """
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path}:{number}"
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{where}: not UTF-8 text ({exc.reason})") from exc
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where}: not valid JSON ({exc.msg})") from exc
            if not isinstance(row, dict):
                raise ValueError(f"{where}: expected a JSON object per line, got {type(row).__name__}")
            yield where, row


def require_text(row: dict, names: tuple[str, ...], where: str) -> None:
    """Raise unless every field in ``names`` is a non-empty string."""
    for name in names:
        if not isinstance(row.get(name), str) or not row[name].strip():
            raise ValueError(f"{where}: field {name!r} must be a non-empty string")
