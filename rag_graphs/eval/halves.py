"""Two fixed halves of a dev set, by question id: ``tune`` to choose defaults on, ``check`` to report.

A default chosen on every dev question measures the choosing as much as the method (issue 28:
graph search gained +10.3 R@5 on the MuSiQue questions it was tuned on and +0.7 on fresh ones).
So every knob is chosen on the tune half only and both halves are reported side by side; a gain
on the check half under half the tune half's gain is overfitted.

The half is the parity of the first byte of ``sha1(id)``: it depends on the id alone (not on file
order, the set's size or a random seed), so a question stays in its half when the file is
re-ordered, filtered or grown, and every run on every machine agrees.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Literal, Protocol, TypeVar

Half = Literal["tune", "check"]
HALVES: tuple[Half, Half] = ("tune", "check")


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=_HasId)


def half_of(question_id: str) -> Half:
    """The half ``question_id`` belongs to: ``tune`` when sha1(id)'s first byte is even."""
    return "tune" if hashlib.sha1(str(question_id).encode("utf-8")).digest()[0] % 2 == 0 else "check"


def split(examples: Iterable[T], half: Half | Literal["all"]) -> list[T]:
    """The examples of ``half`` in their given order (``all``: every example).

    Raises:
        ValueError: ``half`` is not ``tune``, ``check`` or ``all``.
    """
    if half == "all":
        return list(examples)
    if half not in HALVES:
        raise ValueError(f"split {half!r}: expected one of tune, check, all")
    return [e for e in examples if half_of(e.id) == half]
