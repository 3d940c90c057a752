"""Labelled questions from a user's own store, for users without any: ``rag-graphs eval synth``.

Two kinds of seed, drawn with a fixed seed:

- **bridge pairs**: two passages joined by an entity of the store's entity graph (an entity
  that 2 to ``MAX_BRIDGE`` chunks mention: rarer ones link nothing, commoner ones are hubs like
  a country), for two-hop questions whose gold passages are both;
- **single passages**, for one-hop questions.

Generation is **answer-first** (answer-aware question generation, as synthetic-QA pipelines do
for models too weak to pick a good answer themselves): the answer is chosen, with the seed's
random generator, among the spans the extractive reader could answer with (``answers``: spaCy's
entities, dates and numbers and a table's cells, ``rag_graphs.text.candidates``, shaped as
answers are by ``rag_graphs.text.spans``), and the chat model writes only the question for it
(``prompts/templates/synth_single_question.txt`` and ``synth_bridge_question.txt``; the passages
fenced as data), up to ``ANSWERS_PER_SEED`` answers a seed. It is the only path, for real models
too: the model-chosen answer was what failed (12 of SmolLM2's 15 answers were in no passage),
and a capable model writes a question for a given answer as well as it wrote both. A bridge
pair's answer is a span of one passage that the other does not hold
and that is not the joining entity; the prompt asks the model to call the entity by what the
other passage says of it. A model that names the entity anyway wrote a one-hop question, so the
row says so: type ``single``, the answer's passage alone as its support.

The model replies in plain text, not JSON: measured on the demo corpus, SmolLM2-135M under the
JSON grammar wrote the schema's title or a passage's heading in place of a question; a
``pattern`` on the question field is honoured by llama.cpp's JSON-schema grammar, but the
schema is also shown to the model as text, and it copied the pattern's alternatives ("Who |
What | When ...") into its question. In plain text it wrote questions. The
embedded model (``LlamaChat``) decodes under ``QUESTION_GRAMMAR`` (a GBNF grammar: a wh-word
first, one "?" last), which llama.cpp enforces without showing it to the model; other models'
questions are read off their reply (``question_in``).

Each draft is **checked** before it is kept (``check``): the answer occurs in a supporting
passage (normalised as EM normalises), it does not occur in the question, the question is one
(it ends with "?", ``MIN_QUESTION_WORDS`` words at least), no question repeats, and the **round
trip** holds: the extractive reader, given the question and the row's supporting passages,
answers with the row's answer (EM), so a fluent question about something else ("What is the
current status of the Velmora Institute?" for the answer "2009") is dropped. Rows are written in the
evaluator's JSONL format (``id``, ``question``, ``answer``, ``supporting_ids``, ``hops``,
``type``), so ``rag-graphs eval --dataset questions.jsonl`` runs on them, and the paired tests
and the router fit after it.

The questions are as good as the chat model: a real model for real use. With the embedded 135M
model the pipeline writes valid rows (BENCHMARKS.md: ``eval synth``), but they are plain one-hop
questions, and its bridge questions name the joining entity (so they become single rows).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from rag_graphs.entity_graph.rows import CHUNKS_FIELD, COUNT_FIELD, NAME_FIELD, entity_table, has_graph
from rag_graphs.eval.metrics import exact_match, normalize_answer
from rag_graphs.llm.llama import LlamaChat
from rag_graphs.prompts import load_prompt
from rag_graphs.prompts.fencing import defuse, fence
from rag_graphs.store.fields import PRIMARY_FIELD, TEXT_FIELD
from rag_graphs.store.index import ChunkIndex
from rag_graphs.support.progress import progress_bar
from rag_graphs.text.candidates import ParsedPassage
from rag_graphs.text.reader import parsed_documents, read
from rag_graphs.text.reader_features import HEADING
from rag_graphs.text.spans import answer_spans

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
MAX_ANSWER_CHARS = 60
"""Longest answer chosen: an answer is a name, a date or a number, and it is quoted in the
prompt's instruction (defused), so a span of a document stays short there."""
ANSWERS_PER_SEED = 2
"""Answers (so questions) drawn per seed at most: a small store has few seeds, and a passage
holds several facts."""
NOT_ANSWERS = frozenset({"ORDINAL", "CELL"})
"""Span labels never chosen as an answer: "first" asks nothing, and a table cell whose column
names no type ("yes" under "Coastline") is a flag, not a fact a question can ask for by name.
A DATE without a digit is not chosen either ("the winter", "twenty years": spaCy's DATE covers
seasons and spans of time, which no question asks for word for word)."""
QUESTION_GRAMMAR = (
    'root ::= ("Who" | "What" | "When" | "Where" | "Which" | "How" | "In what" | "In which") '
    '" " [^?\\n]{5,200} "?"'
)
"""GBNF for the embedded model's reply: a wh-word, then one line with a single "?" at its end
(llama.cpp decodes under it; the grammar is not shown to the model)."""
_NO_ANSWER = "no answer in the passages"
_LABEL = re.compile(r"^\W*(?:q(?:uestion)?\s*\d*\s*[:.)]\s*)?", re.IGNORECASE)
_WRAPPING = " \"'*`"


@dataclass(frozen=True)
class Draft:
    """A question and the answer it was written for, as ``check`` judges them."""

    question: str = ""
    answer: str = ""


@dataclass(frozen=True)
class Seed:
    """Passages a question is written from; ``entity`` joins a bridge pair."""

    passages: tuple[Document, ...]
    entity: str | None = None


@dataclass(frozen=True)
class Answer:
    """An answer chosen before its question: a span of ``seed.passages[passage]``."""

    text: str
    label: str
    """spaCy's label (PERSON, DATE, CARDINAL...), or a table column's."""
    passage: int


@dataclass
class SynthResult:
    """How a synthesis went: rows written and drafts rejected, by reason."""

    path: Path
    written: int = 0
    rejected: dict[str, int] = field(default_factory=dict)


def _ids(index: ChunkIndex) -> list[str]:
    """Every chunk id, ordered by the chunk's content (its file's content hash, then its text), not
    by the id: an id hashes its file's path, so the same corpus in another folder (a fresh clone, a
    colleague's checkout) would draw other seeds from the same ``seed``."""
    rows = index.chunks.scan([PRIMARY_FIELD, "doc_hash", TEXT_FIELD], batch_size=_BATCH)
    by_content = sorted(rows, key=lambda r: (str(r.get("doc_hash", "")), str(r.get(TEXT_FIELD, ""))))
    return [str(r[PRIMARY_FIELD]) for r in by_content]


def _links(index: ChunkIndex, order: dict[str, int]) -> list[tuple[str, list[str]]]:
    """(entity name, its chunk ids in ``order``) for the entities that 2 to ``MAX_BRIDGE`` chunks
    mention."""
    if not has_graph(index):
        return []
    rows = entity_table(index).scan(
        [NAME_FIELD, CHUNKS_FIELD],
        where=f"{COUNT_FIELD} >= 2 and {COUNT_FIELD} <= {MAX_BRIDGE}",
        batch_size=_BATCH,
    )
    last = len(order)
    return sorted(
        (str(r[NAME_FIELD]), sorted(map(str, r[CHUNKS_FIELD]), key=lambda c: order.get(c, last)))
        for r in rows
    )


def seeds(index: ChunkIndex, count: int, *, seed: int = 0) -> Iterator[Seed]:
    """Up to ``count`` seeds, bridge pairs and single passages alternating while both last; the
    same store content and ``seed`` draw the same seeds wherever its files lie."""
    rng = random.Random(seed)
    ids = _ids(index)
    links = _links(index, {cid: i for i, cid in enumerate(ids)})
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


def _key(text: str) -> str:
    """``text`` normalised as EM normalises, a file name's underscores read as spaces
    ("ilsa_brandt": ingest titles a passage with its file's name), padded for whole-word tests."""
    return f" {normalize_answer(text.replace('_', ' '))} "


def _subject(passage: ParsedPassage) -> frozenset[str]:
    """The words naming what a passage is about: its title's and its leading heading lines' (a
    chunk leads with its headings: "Ilsa Brandt", "Early life")."""
    words = set(_key(passage.title).split())
    for sentence in passage.sentences:
        if sentence.header or not HEADING.fullmatch(sentence.text):
            break
        words.update(_key(sentence.text).split())
    return frozenset(words)


def answers(seed: Seed) -> list[Answer]:
    """The answers a question may be written for, in passage order, each once: the spans the
    extractive reader could answer with (entities, dates, numbers, typed table cells) outside
    heading lines, except a passage's own subject (a question names what it is about, so it
    cannot ask for it) and, in a bridge pair, the joining entity and any span the other passage
    also holds (the answer must need the passage it is in)."""
    parsed = parsed_documents(list(seed.passages))
    texts = [_key(d.page_content) for d in seed.passages]
    joint = _key(seed.entity) if seed.entity else None
    found: list[Answer] = []
    seen: set[str] = set()
    for i, passage in enumerate(parsed):
        subject, others = _subject(passage), [t for j, t in enumerate(texts) if j != i]
        for sentence in passage.sentences:
            if not sentence.header and HEADING.fullmatch(sentence.text):
                continue
            for span in (s for raw in sentence.spans for s in answer_spans(raw, sentence.text)):
                key = _key(span.text)
                if (
                    span.label in NOT_ANSWERS
                    or (span.label == "DATE" and not any(c.isdigit() for c in span.text))
                    or not key.strip()
                    or key in seen
                    or len(span.text) > MAX_ANSWER_CHARS
                    or set(key.split()) <= subject
                    or (joint and (joint in key or key in joint))
                    or any(key in other for other in others)
                ):
                    continue
                seen.add(key)
                found.append(Answer(span.text, span.label, i))
    return found


def question_in(reply: str) -> str:
    """The question of a model's reply: its first line ending in "?", without a "Question:"
    label, quotes or bold (a chat model may lead with "Sure, here is one:"); the reply's first
    line when none ends so (``check`` then finds it is not a question)."""
    lines = [_LABEL.sub("", line).strip(_WRAPPING) for line in reply.strip().splitlines()]
    lines = [line for line in lines if line]
    return next((line for line in lines if line.endswith("?")), lines[0] if lines else "")


def question_writer(model: BaseChatModel) -> Runnable[Any, BaseMessage]:
    """``model``, decoding under ``QUESTION_GRAMMAR`` when it runs in this process (llama.cpp):
    the grammar keeps the embedded model's reply one question, and unlike a JSON schema it is not
    shown to the model, which copied what it was shown. Other models reply freely
    (``question_in`` reads the question off)."""
    if isinstance(model, LlamaChat):
        from llama_cpp import LlamaGrammar  # the embedded extra: a LlamaChat exists only with it

        return model.bind(grammar=LlamaGrammar.from_string(QUESTION_GRAMMAR, verbose=False))
    return model


def question_prompt(seed: Seed, answer: Answer) -> list[BaseMessage]:
    """The messages asking for the question of ``answer``: the passages fenced as data (a bridge
    pair's answer passage last, as the prompt says), the answer and the joining entity quoted in
    the instruction, defused. Both are spans of a document, short (``MAX_ANSWER_CHARS``), and
    already inside the fenced passages; quoted, because with the answer fenced too, or marked
    inside its passage, the embedded model asked about the passage's topic instead (measured on
    six demo-corpus answers: 1 question of 6 asked for its answer fenced, 0 marked, 2 quoted)."""
    passages = "\n\n".join(fence(d.page_content) for d in seed.passages)
    if seed.entity:
        return _BRIDGE.format_messages(
            passages=passages, answer=defuse(answer.text), entity=defuse(seed.entity)
        )
    return _SINGLE.format_messages(passages=passages, answer=defuse(answer.text))


def _answer_last(seed: Seed, answer: Answer) -> tuple[Seed, Answer]:
    """A bridge pair with the answer's passage second (the prompt asks the model to describe the
    entity by the first passage)."""
    last = len(seed.passages) - 1
    if answer.passage == last:
        return seed, answer
    order = [d for i, d in enumerate(seed.passages) if i != answer.passage] + [seed.passages[answer.passage]]
    return Seed(tuple(order), seed.entity), Answer(answer.text, answer.label, last)


def as_written(seed: Seed, answer: Answer, question: str) -> Seed:
    """The passages ``question`` stands on: a bridge question that names its joining entity asks
    one hop, so its row is single, supported by the answer's passage alone (the embedded model
    names the entity)."""
    if seed.entity and _key(seed.entity) in _key(question):
        return Seed((seed.passages[answer.passage],))
    return seed


def check(draft: Draft, seed: Seed, asked: set[str]) -> str | None:
    """Why ``draft`` is not kept (None: it is): empty, the answer not in a passage or given
    away by the question, not a question (no closing "?" or under ``MIN_QUESTION_WORDS`` words:
    the embedded model wrote a passage's title, "The Velmora Institute", as often as a question),
    a question already written, or the round trip fails: the extractive reader, reading the
    question over ``seed``'s passages, does not answer with the answer (EM) or finds no answer (a
    question about something else)."""
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
    reading = read(question, list(seed.passages))
    if reading.no_evidence or not exact_match(reading.answer, [answer]):
        return "the reader answers otherwise"
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

    Per seed: up to ``ANSWERS_PER_SEED`` answers drawn from ``answers`` (a seed without one is
    counted as "no answer in the passages"), the model's question for each, ``check``.

    Raises:
        ValueError: the collection holds no chunks, or ``n`` is below 1.
    """
    if n < 1:
        raise ValueError(f"--n {n}: ask for at least one question")
    result = SynthResult(Path(out).expanduser())
    asked: set[str] = set()
    rows: list[dict[str, Any]] = []
    rng = random.Random(seed)
    writer = question_writer(model)
    bar = progress_bar(total=n, desc="synth", unit="question", disable=not progress)
    drawn = 0
    for drawn_seed in seeds(index, n * TRIES, seed=seed):
        drawn += 1
        if len(rows) >= n:
            break
        choices = answers(drawn_seed)
        if not choices:
            result.rejected[_NO_ANSWER] = result.rejected.get(_NO_ANSWER, 0) + 1
            continue
        for chosen in rng.sample(choices, min(ANSWERS_PER_SEED, len(choices))):
            if len(rows) >= n:
                break
            s, answer = _answer_last(drawn_seed, chosen)
            question = " ".join(question_in(str(writer.invoke(question_prompt(s, answer)).content)).split())
            s = as_written(s, answer, question)
            why = check(Draft(question, answer.text), s, asked)
            if why:
                result.rejected[why] = result.rejected.get(why, 0) + 1
                continue
            asked.add(normalize_answer(question))
            rows.append(
                {
                    "id": f"synth-{len(rows) + 1}",
                    "question": question,
                    "answer": answer.text,
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
