"""In-context demonstrations for DRAG and IterDRAG: load them, and render them for a prompt.

A demonstrations file is JSONL, one solved example per line::

    {"question": "...", "answer": "...", "documents": ["passage text", ...]}

(``rag-graphs eval mine-demos`` writes one from a labelled dev set, keeping
only the examples the model answers correctly, as in Yue et al. 2024.)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from prompts.fencing import fence
from rag_graphs.jsonl import existing_path, read_jsonl, require_text

MAX_DOC_CHARS = 600  # per demonstration document: demonstrations must not crowd out the real context
MAX_DOCS = 3


@dataclass(frozen=True)
class Demonstration:
    """One solved example: a question, the documents retrieved for it, its answer."""

    question: str
    answer: str
    documents: tuple[str, ...] = ()


def _parse(path: Path) -> tuple[Demonstration, ...]:
    demos = []
    for where, row in read_jsonl(path):
        require_text(row, ("question", "answer"), where)
        documents = row.get("documents", [])
        if not isinstance(documents, list) or not all(isinstance(d, str) for d in documents):
            raise ValueError(f"{where}: field 'documents' must be a list of strings")
        demos.append(Demonstration(row["question"], row["answer"], tuple(documents)))
    return tuple(demos)


@lru_cache(maxsize=16)
def _cached(path: str, mtime: float) -> tuple[Demonstration, ...]:
    return _parse(Path(path))


def load_demonstrations(path: str | Path) -> tuple[Demonstration, ...]:
    """The demonstrations in ``path`` (re-read when the file changes).

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: ``path`` is a folder; or a malformed line, naming the file, line and field.
    """
    file = existing_path(path, "file", "demonstrations file (RagContext.demonstrations)")
    return _cached(str(file), file.stat().st_mtime)


def format_demonstrations(demos: tuple[Demonstration, ...] | list[Demonstration], m: int) -> str:
    """The first ``m`` demonstrations as prompt text (documents before the question, as at test time)."""
    blocks = []
    for i, demo in enumerate(list(demos)[:m], start=1):
        docs = "\n".join(
            f"[{j}]\n{fence(d[:MAX_DOC_CHARS])}" for j, d in enumerate(demo.documents[:MAX_DOCS], start=1)
        )
        blocks.append(
            f"Example {i}\nDocuments:\n{docs or '(none)'}\nQuestion: {demo.question}\nAnswer: {demo.answer}"
        )
    return "\n\n".join(blocks) or "(no examples)"
