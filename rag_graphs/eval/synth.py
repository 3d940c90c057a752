"""Labelled questions from a user's own store, for users without any: ``rag-graphs eval synth``.

Two kinds of seed, drawn with a fixed seed:

- **bridge pairs**: two passages joined by an entity of the store's entity graph (an entity
  that 2 to ``MAX_BRIDGE`` chunks mention: rarer ones link nothing, commoner ones are hubs like
  a country), for two-hop questions whose gold passages are both;
- **single passages**, for one-hop questions.

The chat model writes a question and a short answer per seed (``prompts/templates/
synth_bridge_question.txt`` and ``synth_single_question.txt``; the passages fenced as data), and
each is **checked** before it is kept: the answer occurs in a supporting passage (normalised as
EM normalises), it does not occur in the question, the question is one (it ends with "?"), and
no question repeats. Rows are written in
the evaluator's JSONL format (``id``, ``question``, ``answer``, ``supporting_ids``, ``hops``,
``type``), so ``rag-graphs eval --dataset questions.jsonl`` runs on them, and the paired tests
and the router fit after it.

The questions are as good as the chat model: a real model for real use. With the embedded
135M model the pipeline runs and writes valid rows, but most drafts fail the checks and those
kept are weak (the README says so).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel

from rag_graphs.entity_graph.rows import CHUNKS_FIELD, COUNT_FIELD, NAME_FIELD, entity_table, has_graph
from rag_graphs.eval.metrics import normalize_answer
from rag_graphs.llm.structured import invoke_structured
from rag_graphs.prompts import load_prompt
from rag_graphs.prompts.fencing import fence
from rag_graphs.store.fields import PRIMARY_FIELD
from rag_graphs.store.index import ChunkIndex
from rag_graphs.support.progress import progress_bar

_BRIDGE = load_prompt("synth_bridge_question")
_SINGLE = load_prompt("synth_single_question")
MAX_BRIDGE = 5
"""Chunks an entity may be in at most to join a bridge pair (more: a hub, not a link)."""
BRIDGE_SHARE = 0.5
"""Share of the seeds that are bridge pairs (when the store has an entity graph)."""
TRIES = 3
"""Seeds drawn per question asked for at most (drafts that fail the checks are dropped)."""
_BATCH = 1000
MIN_QUESTION_WORDS = 3
"""Words a kept question has at least ("Where was X born?" has four)."""


class Draft(BaseModel):
    """What the chat model writes for a seed."""

    question: str = ""
    answer: str = ""


@dataclass(frozen=True)
class Seed:
    """Passages a question is written from; ``entity`` joins a bridge pair."""

    passages: tuple[Document, ...]
    entity: str | None = None


@dataclass
class SynthResult:
    """How a synthesis went: rows written and drafts rejected, by reason."""

    path: Path
    written: int = 0
    rejected: dict[str, int] = field(default_factory=dict)


def _ids(index: ChunkIndex) -> list[str]:
    return sorted(str(r[PRIMARY_FIELD]) for r in index.chunks.scan([PRIMARY_FIELD], batch_size=_BATCH))


def _links(index: ChunkIndex) -> list[tuple[str, list[str]]]:
    """(entity name, its chunk ids) for the entities that 2 to ``MAX_BRIDGE`` chunks mention."""
    if not has_graph(index):
        return []
    rows = entity_table(index).scan(
        [NAME_FIELD, CHUNKS_FIELD],
        where=f"{COUNT_FIELD} >= 2 and {COUNT_FIELD} <= {MAX_BRIDGE}",
        batch_size=_BATCH,
    )
    return sorted((str(r[NAME_FIELD]), sorted(map(str, r[CHUNKS_FIELD]))) for r in rows)


def seeds(index: ChunkIndex, count: int, *, seed: int = 0) -> Iterator[Seed]:
    """Up to ``count`` seeds, bridge pairs and single passages alternating while both last."""
    rng = random.Random(seed)
    links, ids = _links(index), _ids(index)
    rng.shuffle(links)
    rng.shuffle(ids)
    bridges = round(count * BRIDGE_SHARE) if links else 0
    plan = [("bridge", i) for i in range(min(bridges, len(links)))] + [
        ("single", i) for i in range(min(count - min(bridges, len(links)), len(ids)))
    ]
    rng.shuffle(plan)
    for kind, i in plan:
        if kind == "bridge":
            entity, chunks = links[i]
            docs = index.get(rng.sample(chunks, 2))
            if len(docs) == 2:
                yield Seed(tuple(docs), entity)
        elif docs := index.get([ids[i]]):
            yield Seed(tuple(docs))


def check(draft: Draft, seed: Seed, asked: set[str]) -> str | None:
    """Why ``draft`` is not kept (None: it is): empty, the answer not in a passage or given
    away by the question, not a question (no closing "?" or under ``MIN_QUESTION_WORDS`` words:
    the embedded model writes a passage's title, "The Velmora Institute", as often as a question),
    or a question already written."""
    question, answer = " ".join(draft.question.split()), " ".join(draft.answer.split())
    if not question or not answer:
        return "empty question or answer"
    gold = normalize_answer(answer)
    if not gold:
        return "empty question or answer"
    if not any(gold in normalize_answer(d.page_content) for d in seed.passages):
        return "answer not in a supporting passage"
    if gold in normalize_answer(question):
        return "answer given in the question"
    if not question.endswith("?") or len(question.split()) < MIN_QUESTION_WORDS:
        return "not a question"
    if normalize_answer(question) in asked:
        return "repeated question"
    return None


def synthesize(
    index: ChunkIndex,
    model: BaseChatModel,
    out: str | Path,
    *,
    n: int = 50,
    seed: int = 0,
    progress: bool = True,
) -> SynthResult:
    """Write up to ``n`` checked questions from ``index`` to ``out`` (JSONL); return what happened.

    Raises:
        ValueError: the collection holds no chunks, or ``n`` is below 1.
    """
    if n < 1:
        raise ValueError(f"--n {n}: ask for at least one question")
    result = SynthResult(Path(out).expanduser())
    asked: set[str] = set()
    rows: list[dict[str, Any]] = []
    bar = progress_bar(total=n, desc="synth", unit="question", disable=not progress)
    drawn = 0
    for s in seeds(index, n * TRIES, seed=seed):
        drawn += 1
        if len(rows) >= n:
            break
        prompt, extra = (_BRIDGE, {"entity": s.entity}) if s.entity else (_SINGLE, {})
        passages = "\n\n".join(fence(d.page_content) for d in s.passages)
        draft = invoke_structured(
            model, prompt.format_messages(passages=passages, **extra), Draft, Draft()
        ).value
        why = check(draft, s, asked)
        if why:
            result.rejected[why] = result.rejected.get(why, 0) + 1
            continue
        asked.add(normalize_answer(draft.question))
        rows.append(
            {
                "id": f"synth-{len(rows) + 1}",
                "question": " ".join(draft.question.split()),
                "answer": " ".join(draft.answer.split()),
                "supporting_ids": [str(d.id) for d in s.passages],
                "hops": len(s.passages),
                "type": "bridge" if s.entity else "single",
            }
        )
        bar.update(1)
    bar.close()
    if not drawn:
        raise ValueError(f"collection {index.collection!r} holds no chunks to write questions from")
    result.path.parent.mkdir(parents=True, exist_ok=True)
    result.path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    result.written = len(rows)
    return result
