"""In-context demonstrations for DRAG and IterDRAG: load them, and render them for a prompt.

A demonstrations file is JSONL, one solved example per line::

    {"question": "...", "answer": "...", "documents": ["passage text", ...],
     "chain": [{"follow_up": "...", "intermediate_answer": "..."}, ...]}

``chain`` (optional) is the IterDRAG reasoning: the follow-up questions and their
intermediate answers that lead to the answer. DRAG shows a demonstration as
documents, question, answer; IterDRAG as documents, question, its chain
("Follow up:" / "Intermediate answer:" lines) and "So the final answer is:", the
format of Yue et al. 2024, so a model learns both the answer and the steps.

``RagContext.demonstrations`` is ``builtin`` (the file shipped in the package,
``rag_graphs/data/demonstrations.jsonl``: mined from MuSiQue dev questions, see
``rag_graphs/data/README.md``), ``none``, or a path to your own file;
``rag-graphs mine-demos`` writes one from a labelled set.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from rag_graphs.prompts.fencing import fence
from rag_graphs.text.jsonl import existing_path, read_jsonl, require_text

MAX_DOC_CHARS = 600  # per demonstration document: demonstrations must not crowd out the real context
MAX_DOCS = 5
BUILTIN = "builtin"
BUILTIN_PATH = Path(__file__).parents[1] / "data" / "demonstrations.jsonl"
"""The shipped demonstrations (package data)."""


@dataclass(frozen=True)
class Demonstration:
    """One solved example: a question, the documents retrieved for it, its answer, and
    (for IterDRAG) the follow-up / intermediate-answer chain that reaches it."""

    question: str
    answer: str
    documents: tuple[str, ...] = ()
    chain: tuple[tuple[str, str], ...] = ()


def _chain(row: dict, where: str) -> tuple[tuple[str, str], ...]:
    steps = row.get("chain", [])
    if not isinstance(steps, list) or not all(
        isinstance(s, dict)
        and isinstance(s.get("follow_up"), str)
        and isinstance(s.get("intermediate_answer"), str)
        for s in steps
    ):
        raise ValueError(
            f"{where}: field 'chain' must be a list of {{follow_up, intermediate_answer}} objects"
        )
    return tuple((s["follow_up"], s["intermediate_answer"]) for s in steps)


def _parse(path: Path) -> tuple[Demonstration, ...]:
    demos = []
    for where, row in read_jsonl(path):
        require_text(row, ("question", "answer"), where)
        documents = row.get("documents", [])
        if not isinstance(documents, list) or not all(isinstance(d, str) for d in documents):
            raise ValueError(f"{where}: field 'documents' must be a list of strings")
        demos.append(Demonstration(row["question"], row["answer"], tuple(documents), _chain(row, where)))
    return tuple(demos)


@lru_cache(maxsize=16)
def _cached(path: str, mtime: float) -> tuple[Demonstration, ...]:
    return _parse(Path(path))


def demonstrations_path(spec: str | None) -> Path | None:
    """The file ``RagContext.demonstrations`` names: ``builtin`` -> the shipped file,
    ``none``/empty -> None, anything else a path."""
    if spec is None or spec.strip().lower() in ("", "none"):
        return None
    return BUILTIN_PATH if spec.strip().lower() == BUILTIN else Path(spec)


def load_demonstrations(path: str | Path) -> tuple[Demonstration, ...]:
    """The demonstrations in ``path`` (``builtin``: the shipped ones; re-read when the file changes).

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: ``path`` is a folder; or a malformed line, naming the file, line and field.
    """
    where = demonstrations_path(str(path)) or Path(path)
    file = existing_path(where, "file", "demonstrations file (RagContext.demonstrations)")
    return _cached(str(file), file.stat().st_mtime)


def _documents(demo: Demonstration) -> str:
    """The demonstration's documents most relevant last, as the real context is shown."""
    shown = list(demo.documents[:MAX_DOCS])[::-1]
    return "\n".join(f"[{j}]\n{fence(d[:MAX_DOC_CHARS])}" for j, d in enumerate(shown, start=1)) or "(none)"


def format_demonstrations(
    demos: tuple[Demonstration, ...] | list[Demonstration], m: int, *, chains: bool = False
) -> str:
    """The first ``m`` demonstrations as prompt text (documents before the question, as at test time).

    ``chains=False`` (DRAG) ends each with ``Answer: <answer>``; ``chains=True`` (IterDRAG)
    with its Follow up / Intermediate answer lines and ``So the final answer is: <answer>``.
    """
    blocks = []
    for i, demo in enumerate(list(demos)[:m], start=1):
        head = f"Example {i}\nDocuments:\n{_documents(demo)}\nQuestion: {demo.question}\n"
        if chains:
            steps = "".join(f"Follow up: {q}\nIntermediate answer: {a}\n" for q, a in demo.chain)
            blocks.append(f"{head}{steps}So the final answer is: {demo.answer}")
        else:
            blocks.append(f"{head}Answer: {demo.answer}")
    return "\n\n".join(blocks) or "(no examples)"
