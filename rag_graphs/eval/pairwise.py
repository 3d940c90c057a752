"""The GraphRAG paper's pairwise comparison: which of two methods' answers is better, per criterion.

EM/F1 and the per-answer judges need a gold answer; a global question ("what are the main
themes of these reports?") has none. Edge et al. (2024, "From Local to Global") compare two
conditions' answers to the same question with an LLM judge instead, one criterion at a time:
comprehensiveness, diversity, empowerment, and directness as a control (the criterion a
terse answer should win). The judge names the better answer or a tie with a reason; each
comparison is asked in both orders, because judges favour a position, and may be repeated.
The result is a win rate per criterion of method A over method B.

Here the two answers come from an evaluation run folder (``rows.jsonl``), question by question,
so ``rag-graphs eval --report RUN_DIR --pairwise graphrag,raptor --judge SPEC`` compares any
two methods of a finished run without running them again. Answers are fenced as data: a
document's "note to the grader" repeated in an answer is text to compare, not an instruction.
A reply that cannot be parsed (or a judge call that fails) is counted as unreadable, never as
a win or a tie. Use a capable judge: the embedded 135M model only exercises the path.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import mean
from typing import Literal

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from rag_graphs.eval.metrics import bootstrap_ci
from rag_graphs.eval.report import cell
from rag_graphs.eval.rows import read_rows
from rag_graphs.llm.structured import invoke_structured
from rag_graphs.prompts import load_prompt
from rag_graphs.prompts.fencing import fence
from rag_graphs.support.terminal import visible
from rag_graphs.text.jsonl import existing_path

log = logging.getLogger(__name__)

CRITERIA: dict[str, str] = {
    "comprehensiveness": "how much detail the answer provides to cover all aspects and details "
    "of the question",
    "diversity": "how varied and rich the answer is in providing different perspectives and "
    "insights on the question",
    "empowerment": "how well the answer helps the reader understand the topic and make informed "
    "judgements about it",
    "directness": "how specifically and clearly the answer addresses the question",
}
"""The paper's criteria (directness is its control) -> the definition the judge is shown."""

PAIRWISE_TOKENS = 256
"""Reply budget of a pairwise verdict: a winner and a one-sentence reason."""

Outcome = Literal["a", "b", "tie", "unreadable"]
Order = Literal["ab", "ba"]
_PAIRWISE = load_prompt("judge_pairwise")
_SLUG = re.compile(r"[^A-Za-z0-9_.-]+")
_POINTS = {"a": 1.0, "tie": 0.5, "b": 0.0}
"""What a readable verdict is worth to A (the paper's 100 / 50 / 0, as a share)."""


class Preference(BaseModel):
    """Which of two shown answers is better on one criterion."""

    winner: Literal["first", "second", "tie"] = Field(
        description="the better answer on the criterion: first, second, or tie"
    )
    reason: str = Field(default="", description="why, in one sentence")


@dataclass
class Tally:
    """Verdicts on one criterion, counted from A's side (both orders, every repeat)."""

    a: int = 0
    b: int = 0
    tie: int = 0
    unreadable: int = 0

    @property
    def judged(self) -> int:
        return self.a + self.b + self.tie

    @property
    def win_rate(self) -> float | None:
        """A's win rate: a win counts 1, a tie 0.5, over the readable verdicts (None without any)."""
        return (self.a + self.tie / 2) / self.judged if self.judged else None


@dataclass
class Verdict:
    """One judge call: which question, criterion, order and repeat, and what it decided."""

    id: str
    criterion: str
    order: Order
    repeat: int
    outcome: Outcome
    reason: str


@dataclass
class PairwiseResult:
    """A pairwise comparison of methods ``a`` and ``b`` over the questions both answered."""

    a: str
    b: str
    judge: str
    repeats: int
    questions: int
    tallies: dict[str, Tally]
    verdicts: list[Verdict] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Question ids left out: one of the two methods has no answer (an error, an empty answer)."""

    def interval(self, criterion: str) -> tuple[float, float] | None:
        """95% bootstrap interval of A's win rate on ``criterion``, resampling questions (None
        without a readable verdict). Questions are the unit: a question's verdicts (both orders,
        every repeat) share its answers, so they are averaged into one score per question first."""
        by_question: dict[str, list[float]] = {}
        for v in self.verdicts:
            if v.criterion == criterion and v.outcome != "unreadable":
                by_question.setdefault(v.id, []).append(_POINTS[v.outcome])
        scores = [mean(points) for points in by_question.values()]
        return bootstrap_ci(scores) if scores else None

    def to_json(self) -> dict:
        return {
            **{k: v for k, v in asdict(self).items() if k != "tallies"},
            "tallies": {
                c: {**asdict(t), "win_rate": t.win_rate, "win_rate_ci": self.interval(c)}
                for c, t in self.tallies.items()
            },
        }


def parse_pair(spec: str) -> tuple[str, str]:
    """``"graphrag,raptor"`` -> ``("graphrag", "raptor")``.

    Raises:
        ValueError: not two different comma-separated method names (one line naming ``spec``).
    """
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if len(names) != 2 or names[0] == names[1]:
        raise ValueError(
            f"--pairwise needs two different methods as A,B (e.g. graphrag,raptor), got {spec!r}"
        )
    return names[0], names[1]


def prefer(
    judge: BaseChatModel, criterion: str, question: str, first: str, second: str
) -> tuple[Literal["first", "second", "tie"] | None, str]:
    """The judge's preference between two answers on ``criterion`` and its reason; None (with
    why) when the reply cannot be parsed or the call fails: a judge error never sinks a comparison."""
    messages = _PAIRWISE.format_messages(
        criterion=criterion,
        definition=CRITERIA[criterion],
        question=question,
        first=fence(first),
        second=fence(second),
    )
    try:
        result = invoke_structured(judge, messages, Preference, Preference(winner="tie"))
    except Exception as exc:  # a judge model may fail (server gone): recorded, not raised
        log.warning("pairwise judge failed: %s: %s", type(exc).__name__, exc)
        return None, f"judge failed: {type(exc).__name__}"
    if result.method == "default":
        return None, result.error or "unparseable verdict"
    return result.value.winner, result.value.reason


def _outcome(winner: str | None, order: Order) -> Outcome:
    """A verdict on (first, second) as seen from A's side of the comparison."""
    if winner is None:
        return "unreadable"
    if winner == "tie":
        return "tie"
    a_first = order == "ab"
    return "a" if (winner == "first") == a_first else "b"


def compare_answers(
    judge: BaseChatModel,
    question: str,
    answer_a: str,
    answer_b: str,
    *,
    criteria: Sequence[str] = tuple(CRITERIA),
    repeats: int = 1,
    id: str = "",
) -> list[Verdict]:
    """Every verdict on one question: each criterion, ``repeats`` times, in both orders."""
    verdicts = []
    for criterion in criteria:
        for repeat in range(repeats):
            for order in ("ab", "ba"):
                first, second = (answer_a, answer_b) if order == "ab" else (answer_b, answer_a)
                winner, reason = prefer(judge, criterion, question, first, second)
                verdicts.append(Verdict(id, criterion, order, repeat, _outcome(winner, order), reason))
    return verdicts


def _answers(rows: list[dict], method: str) -> dict[str, tuple[str, str]]:
    """Question id -> (question, answer) of ``method``'s rows that have an answer (the last row
    of a question wins: a resumed run may have rerun it)."""
    out = {}
    for row in rows:
        answer = str(row.get("prediction") or "").strip()
        if row["method"] == method and answer and not row.get("error"):
            out[str(row["id"])] = (str(row.get("question", "")), answer)
    return out


def compare_methods(
    run_dir: str | Path,
    a: str,
    b: str,
    judge: BaseChatModel,
    *,
    criteria: Sequence[str] = tuple(CRITERIA),
    repeats: int = 1,
    limit: int | None = None,
    judge_name: str | None = None,
) -> PairwiseResult:
    """Compare methods ``a`` and ``b`` of a run folder on every question both answered.

    Raises:
        FileNotFoundError: no run folder at ``run_dir``.
        ValueError: ``a`` or ``b`` has no rows in the run, they are the same method, an unknown
            criterion, ``repeats`` < 1, or no question was answered by both (one line each).
    """
    folder = existing_path(run_dir, "dir", "run directory")
    if a == b:
        raise ValueError(f"--pairwise compares two different methods, got {visible(a)!r} twice")
    unknown = [c for c in criteria if c not in CRITERIA]
    if unknown or not criteria:
        raise ValueError(f"unknown pairwise criterion {unknown!r}: choose from {', '.join(CRITERIA)}")
    if repeats < 1:
        raise ValueError(f"pairwise repeats must be at least 1, got {repeats}")
    rows = read_rows(folder)
    present = list(dict.fromkeys(r["method"] for r in rows))
    for name in (a, b):
        if name not in present:
            shown = ", ".join(visible(m) for m in present) or "none"
            raise ValueError(f"method {visible(name)!r} has no rows in run {folder} (its methods: {shown})")
    answers_a, answers_b = _answers(rows, a), _answers(rows, b)
    asked = list(dict.fromkeys(str(r["id"]) for r in rows if r["method"] in (a, b)))
    both = [q for q in asked if q in answers_a and q in answers_b][:limit]
    if not both:
        raise ValueError(
            f"no question of run {folder} has an answer from both {visible(a)!r} and {visible(b)!r}"
        )
    result = PairwiseResult(
        a=a,
        b=b,
        judge=judge_name or type(judge).__name__,
        repeats=repeats,
        questions=len(both),
        tallies={c: Tally() for c in criteria},
        skipped=[q for q in asked if q not in answers_a or q not in answers_b],
    )
    for qid in both:
        question, answer_a = answers_a[qid]
        verdicts = compare_answers(
            judge, question, answer_a, answers_b[qid][1], criteria=criteria, repeats=repeats, id=qid
        )
        for verdict in verdicts:
            tally = result.tallies[verdict.criterion]
            setattr(tally, verdict.outcome, getattr(tally, verdict.outcome) + 1)
        result.verdicts += verdicts
    return result


def write_pairwise(run_dir: str | Path, result: PairwiseResult) -> Path:
    """``pairwise-<a>-<b>.json`` beside the run's rows (method names reduced to safe file-name
    characters: they are data from the run folder, never a path)."""

    def slug(name: str) -> str:
        return _SLUG.sub("_", name).lstrip(".") or "_"

    path = Path(run_dir).expanduser() / f"pairwise-{slug(result.a)}-{slug(result.b)}.json"
    path.write_text(json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def pairwise_table(result: PairwiseResult) -> str:
    """The tallies as a Markdown table, one row per criterion (method names are data: ``cell``)."""
    a, b = cell(result.a), cell(result.b)
    lines = [
        f"| criterion | {a} wins | {b} wins | ties | unreadable | {a} win rate | 95% CI |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for criterion, t in result.tallies.items():
        rate = "n/a" if t.win_rate is None else f"{t.win_rate:.2f}"
        ci = result.interval(criterion)
        span = "n/a" if ci is None else f"{ci[0]:.2f}-{ci[1]:.2f}"
        lines.append(f"| {criterion} | {t.a} | {t.b} | {t.tie} | {t.unreadable} | {rate} | {span} |")
    return "\n".join(lines)
