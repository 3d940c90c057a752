"""How an evaluation runs, as one typed value (``evaluate(dataset, methods, options=...)``), the way
Docling's pipeline options group a conversion's settings: which questions, where the run and the
corpus's index live, what is scored, how it is shown and checkpointed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from rag_graphs.eval.judges import Evaluator

Setting = Literal["open", "distractor", "oracle"]
Reader = Literal["generate", "extract"]
READERS: tuple[Reader, ...] = ("generate", "extract")


@dataclass(frozen=True)
class EvalOptions:
    """Everything about an evaluation but its dataset, methods and ``RagContext``."""

    setting: Setting = "open"
    """``open`` searches the dataset's indexed passages; ``distractor`` and ``oracle`` only each
    question's own or gold passages."""
    limit: int | None = None
    """The first ``limit`` questions (after ``sample``)."""
    sample: int | None = None
    """A seeded random sample of this many questions."""
    seed: int = 0
    concurrency: int = 1
    """Questions run side by side."""
    run_dir: str | Path | None = None
    """The run folder; an existing one is resumed. None: a new folder under ``runs_root``."""
    runs_root: str | Path = "runs"
    eval_store: str = ".rag-graphs/eval.db"
    """Where the dataset's passages are indexed once, reused by later runs."""
    readers: Sequence[Reader] = ()
    """Answer every question once per reader (``RagContext.reader``), e.g. ``("extract",
    "generate")`` to compare them in one run; rows carry their reader and the report has a row per
    method and reader. Empty: the context's reader (``auto`` resolved) alone."""
    retrieval_only: bool = False
    """Stop every run before its answer: retrieval metrics only, in minutes."""
    evaluators: Sequence[Evaluator] = ()
    """Scores beyond the lexical ones (``rag_graphs.eval.judges`` or LangSmith-shaped evaluators)."""
    progress: bool = True
    judge: str | None = None
    """The chat model spec behind ``evaluators``, recorded for ``--resume``."""
    checkpoints: str | Path | None = None
    """A SQLite file or ``postgresql://`` URI: each run checkpoints on a thread of the run's id."""
    max_report_calls: int = 200
    """Most LLM calls the evaluation may spend writing the community reports a ``graphrag`` run
    needs and the store lacks (one per community; counted before the first, ``--max-report-calls``).
    Above it the evaluation is refused before any call: raise it, or build the reports beforehand
    (``rag-graphs graph communities``)."""
