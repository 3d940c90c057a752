"""The fixed tune/check halves of a dev set (issue 28's tuning protocol)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pytest

from rag_graphs.eval.halves import half_of, split


@dataclass
class Q:
    id: str


IDS = [f"2hop__{i}_{i * 7}" for i in range(400)]


def test_the_half_is_the_parity_of_sha1_of_the_id():
    for qid in IDS[:50]:
        even = hashlib.sha1(qid.encode()).digest()[0] % 2 == 0
        assert half_of(qid) == ("tune" if even else "check")
    # pinned values: a change of rule would silently move every question to the other half
    assert [half_of(q) for q in ("a", "b", "c", "d")] == ["tune", "check", "tune", "tune"]


def test_halves_partition_the_set_and_split_it_near_evenly():
    questions = [Q(i) for i in IDS]
    tune, check = split(questions, "tune"), split(questions, "check")
    assert {q.id for q in tune} | {q.id for q in check} == set(IDS)
    assert not {q.id for q in tune} & {q.id for q in check}
    assert 160 <= len(tune) <= 240
    assert split(questions, "all") == questions


def test_a_question_keeps_its_half_whatever_the_order_or_company():
    questions = [Q(i) for i in IDS]
    tune = {q.id for q in split(questions, "tune")}
    shuffled = list(reversed(questions[:37]))
    assert {q.id for q in split(shuffled, "tune")} == tune & {q.id for q in shuffled}
    assert [q.id for q in split(shuffled, "tune")] == [q.id for q in shuffled if q.id in tune]  # order kept


def test_an_unknown_half_is_a_clear_error():
    with pytest.raises(ValueError, match="tune, check, all"):
        split([Q("x")], "train")  # type: ignore[arg-type]
