"""JSONL reading with errors that name the file, line and field (datasets, demonstrations)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path


def read_jsonl(path: Path) -> Iterator[tuple[str, dict]]:
    """``(file:line, object)`` for every non-empty line.

    Raises:
        ValueError: a line is not JSON, or not a JSON object.
    """
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where}: not valid JSON ({exc.msg})") from exc
            if not isinstance(row, dict):
                raise ValueError(f"{where}: expected a JSON object per line")
            yield where, row


def require_text(row: dict, names: tuple[str, ...], where: str) -> None:
    """Raise unless every field in ``names`` is a non-empty string."""
    for name in names:
        if not isinstance(row.get(name), str) or not row[name].strip():
            raise ValueError(f"{where}: field {name!r} must be a non-empty string")
