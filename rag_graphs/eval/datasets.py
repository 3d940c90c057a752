"""Multi-hop QA sets: the ``../shared/eval`` layout, or a user's own JSONL of questions.

A dataset folder holds ``dev.jsonl`` (questions) and, where there is evidence
text, ``corpus.jsonl`` (``{"id", "title", "text"}`` passages). A user's file
needs only ``question`` and ``answer`` per line; ``id``, ``answer_aliases``,
``supporting_ids``, ``hops``, ``type`` and inline ``passages`` are optional.
Bad rows fail loading with the file, line and field named, before anything runs.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rag_graphs.text.jsonl import read_json_object, read_jsonl, require_text

QUESTIONS_FILE = "dev.jsonl"
CORPUS_FILE = "corpus.jsonl"
MAX_TITLE_CHARS = 1_000
"""A passage title's length at most: the title leads every stored piece of its passage
(``rag_graphs.eval.corpus``), so one over a piece's size could never be stored."""


@dataclass(frozen=True)
class Example:
    """One question with its gold answer(s) and gold passages."""

    id: str
    question: str
    answer: str
    aliases: tuple[str, ...] = ()
    supporting_ids: tuple[str, ...] = ()
    passage_ids: tuple[str, ...] = ()  # the question's own passages (distractor setting)
    hops: int | None = None
    type: str | None = None
    chain: tuple[tuple[str, str], ...] = ()
    """The gold reasoning chain as (sub-question, its answer) pairs, from a row's
    ``decomposition`` (MuSiQue); empty when the set has none or a step is not a question."""

    @property
    def golds(self) -> list[str]:
        """The answer and its aliases, every string a prediction may match."""
        return [self.answer, *self.aliases]


@dataclass
class Dataset:
    """Questions, plus where their passages come from."""

    name: str
    questions_path: Path
    examples: list[Example]
    corpus_path: Path | None = None
    meta: dict = field(default_factory=dict)

    @property
    def has_passages(self) -> bool:
        return self.corpus_path is not None or any(e.passage_ids for e in self.examples)

    def passages(self) -> Iterator[dict]:
        """Every passage ``{"id", "title", "text"}``: the corpus file, else the questions' own."""
        if self.corpus_path is not None:
            for where, row in read_jsonl(self.corpus_path):
                yield _check_passage(row, where)
            return
        seen: set[str] = set()
        for where, row in read_jsonl(self.questions_path):
            for passage in row.get("passages") or []:
                if passage["id"] not in seen:
                    seen.add(passage["id"])
                    yield _check_passage(passage, where)

    def select(self, *, limit: int | None = None, sample: int | None = None, seed: int = 0) -> list[Example]:
        """The first ``limit`` examples, or a seeded random ``sample`` of them (file order kept).

        Raises:
            ValueError: ``limit`` or ``sample`` is below 1 (``limit=-1`` would silently drop the
                last question, as a Python slice does).
        """
        for name, value in (("limit", limit), ("sample", sample)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"eval: {name}={value!r}: expected a whole number of questions >= 1")
        examples = self.examples
        if sample is not None and sample < len(examples):
            chosen = set(random.Random(seed).sample(range(len(examples)), sample))
            examples = [e for i, e in enumerate(examples) if i in chosen]
        return examples[:limit] if limit is not None else examples


def _check_passage(row: dict, where: str) -> dict:
    require_text(row, ("id", "text"), where)
    title = str(row.get("title") or "")
    if len(title) > MAX_TITLE_CHARS:
        raise ValueError(
            f"{where}: field 'title' is over {MAX_TITLE_CHARS:,} characters ({len(title):,}); "
            "it leads every stored piece of the passage: shorten it"
        )
    return row


def _strings(row: dict, name: str, where: str) -> tuple[str, ...]:
    value = row.get(name) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where}: field {name!r} must be a list of strings")
    return tuple(value)


def _example(number: int, where: str, row: dict) -> Example:
    require_text(row, ("question", "answer"), where)
    passages = row.get("passages") or []
    if not isinstance(passages, list) or not all(isinstance(p, dict) and "id" in p for p in passages):
        raise ValueError(f"{where}: field 'passages' must be a list of objects with an 'id'")
    hops = row.get("hops")
    if hops is not None and not isinstance(hops, int):
        raise ValueError(f"{where}: field 'hops' must be an integer or null")
    return Example(
        id=str(row.get("id") or f"line-{number}"),
        question=row["question"].strip(),
        answer=row["answer"].strip(),
        aliases=_strings(row, "answer_aliases", where),
        supporting_ids=_strings(row, "supporting_ids", where),
        passage_ids=tuple(str(p["id"]) for p in passages),
        hops=hops,
        type=row.get("type"),
        chain=_chain(row.get("decomposition"), where),
    )


def _chain(decomposition: object, where: str) -> tuple[tuple[str, str], ...]:
    """``(sub-question, answer)`` pairs with MuSiQue's ``#n`` references to earlier answers
    filled in; empty when any step is a knowledge-base relation ("X >> author"), not a question."""
    if not decomposition:
        return ()
    if not isinstance(decomposition, list) or not all(
        isinstance(s, dict) and isinstance(s.get("question"), str) and isinstance(s.get("answer"), str)
        for s in decomposition
    ):
        raise ValueError(f"{where}: field 'decomposition' must be a list of {{question, answer}} objects")
    answers = [s["answer"].strip() for s in decomposition]
    if any(">>" in s["question"] for s in decomposition):
        return ()

    def filled(text: str) -> str:
        def answer(m: re.Match) -> str:
            n = int(m.group(1))
            return answers[n - 1] if 1 <= n <= len(answers) else m.group(0)

        return " ".join(_REFERENCE.sub(answer, text).split())

    return tuple((filled(s["question"]), a) for s, a in zip(decomposition, answers, strict=True))


_REFERENCE = re.compile(r"#(\d+)")


def _meta(path: Path) -> dict:
    """A dataset folder's optional ``meta.json``; malformed, it fails naming the file."""
    return read_json_object(path) if path.is_file() else {}


def load_dataset(path: str | Path) -> Dataset:
    """Load a dataset folder (``dev.jsonl`` [+ ``corpus.jsonl``]) or a questions JSONL file.

    Raises:
        FileNotFoundError: nothing at ``path``, or a folder without ``dev.jsonl``.
        ValueError: a malformed row, naming the file, line and field; or duplicate ids.
    """
    path = Path(path).expanduser().resolve()  # one absolute path in errors and run configs
    if path.is_dir():
        questions, corpus = path / QUESTIONS_FILE, path / CORPUS_FILE
        if not questions.is_file():
            raise FileNotFoundError(f"dataset folder {path} has no {QUESTIONS_FILE}")
        corpus_path = corpus if corpus.is_file() else None
        meta = _meta(path / "meta.json")
        name = path.name
    elif path.is_file():
        questions, corpus_path, meta, name = path, None, {}, path.stem
    else:
        raise FileNotFoundError(
            f"no dataset at {path}: expected a folder with {QUESTIONS_FILE} or a .jsonl file"
        )
    examples = [_example(n, where, row) for n, (where, row) in enumerate(read_jsonl(questions), start=1)]
    if not examples:
        raise ValueError(f"{questions}: no questions")
    ids = [e.id for e in examples]
    if len(set(ids)) != len(ids):
        duplicate = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"{questions}: duplicate question id {duplicate!r}")
    return Dataset(name=name, questions_path=questions, examples=examples, corpus_path=corpus_path, meta=meta)
