"""The extract reader as the final answer of a run: ``rag_graphs.text.reader``'s reading of the
passages, turned into the fields every answer node writes (answer, citations, steps).

``RagContext.reader`` says who answers: the chat model (``generate``) or the reader
(``extract``), ``auto`` choosing ``extract`` for the embedded SmolLM2-135M, which given the gold
passages got 0 exact matches of 100 (issue 51). Every method reaches this through the shared
generate step (``make_generate``) or, where a loop answers as it stops (ReAct's and IterDRAG's
final answer), through ``read_answer`` itself, so the 19 methods answer the same way.

The reading's answer becomes the short answer line the evaluator scores; the evidence sentences
follow it, one a line, each with the ``[n]`` of its passage in the numbering the generate step
would have shown (``number_passages``), so citations resolve exactly as a model's do
(``extract_citations``), each quoting its evidence sentence. The chain of evidence sentences goes
into ``steps`` hop by hop. No candidate above the reader's threshold: the answer says it does not
know and why, every passage is cited as the context it read (``explicit=False``) and ``finish``
makes the outcome ``no_evidence``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from langchain_core.documents import Document

from rag_graphs.config.context import RagContext
from rag_graphs.nodes.events import emit, step
from rag_graphs.prompts import load_prompt
from rag_graphs.search.retrieval import embeddings_for
from rag_graphs.state import Citation, RagState, Step
from rag_graphs.text.citations import QUOTE_CHARS, extract_citations, number_passages
from rag_graphs.text.reader import Evidence, Reading, read

Reader = Literal["generate", "extract"]
EMBEDDED_CHAT = "embedded"
"""The chat model spec ``reader="auto"`` reads for itself (``rag_graphs.llm.models.EMBEDDED``)."""
_EMBEDDED_CLASS = "EmbeddedChat"
"""The class name of a loaded embedded model (``rag_graphs.llm.models``), passed as an instance."""
_MARKER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def reader_of(ctx: RagContext) -> Reader:
    """The reader a run answers with: ``ctx.reader``, ``auto`` resolved by the chat model."""
    if ctx.reader != "auto":
        return ctx.reader
    model = ctx.chat_model
    embedded = model == EMBEDDED_CHAT if isinstance(model, str) else type(model).__name__ == _EMBEDDED_CLASS
    return "extract" if embedded else "generate"


def is_extract(ctx: RagContext) -> bool:
    """True when the run's answers are read out of the passages, not generated."""
    return reader_of(ctx) == "extract"


def warm_up_reader(ctx: RagContext) -> None:
    """Load what the reader loads once (its spaCy pipeline, the embedder) before a clock starts."""
    read(
        "Who warmed up?",
        [Document(page_content="Ada Lovelace warmed up.", id="w")],
        embeddings=embeddings_for(ctx),
    )


def _answer_text(reading: Reading, markers: list[tuple[int, Evidence]]) -> str:
    """The short answer on the first line, then each evidence sentence with its ``[n]``; their
    own ``[2]`` is shown as ``⟦2⟧`` (``numbered_passage``'s rule): text from a document never
    becomes a citation of ours."""
    lines = [_unmarked(e.sentence) + f" [{n}]" for n, e in markers]
    return str(
        load_prompt("extracted_answer")
        .format_messages(answer=_unmarked(reading.answer), evidence="\n".join(lines))[-1]
        .content
    )


def _unmarked(text: str) -> str:
    """``text`` from a document on one line, its ``[2]``-like markers shown as ``⟦2⟧``."""
    return _MARKER.sub(lambda m: f"⟦{m.group(1)}⟧", _flat(text))


def _flat(sentence: str) -> str:
    """A sentence on one line (a chunk's heading line may lead it)."""
    return " ".join(sentence.split())


def _evidence(reading: Reading) -> list[Evidence]:
    """The sentences the answer stands on, hop by hop (the quote alone when there is no chain)."""
    if reading.chain:
        return list(reading.chain)
    if reading.doc_index is not None and reading.quote:
        return [Evidence(doc_index=reading.doc_index, sentence=reading.quote)]
    return []


def _number(doc: Document, shown: list[Document]) -> int:
    """The ``[n]`` ``doc`` was numbered with in ``shown`` (by chunk id, or the object itself)."""
    return next(
        i for i, d in enumerate(shown, start=1) if d is doc or (doc.id is not None and d.id == doc.id)
    )


def read_answer(
    state: RagState, ctx: RagContext, docs: list[Document], numbering: Sequence[Document] = ()
) -> dict:
    """The reader's answer from ``docs`` (best first): ``answer``, ``citations``, ``shown`` and
    ``steps`` (the evidence chain, then the answer), no model call. ``numbering`` goes on with a
    run's numbering (ReAct's observations, IterDRAG's step prompt), as the generate step's does.
    The caller adds ``finish``: the outcome is ``no_evidence`` when the reader found none."""
    emit("start", passages=len(docs))
    shown = number_passages(docs, numbering).shown
    reading = read(state["question"], docs, embeddings=embeddings_for(ctx)) if docs else None
    if reading is None or reading.no_evidence or not reading.answer.strip():
        reason = reading.reason if reading is not None else "no passages were found"
        answer = str(load_prompt("no_evidence_answer").format_messages(reason=reason)[-1].content)
        emit("end", answer=answer)
        return {
            "answer": answer,
            "citations": extract_citations(answer, shown),  # no marker: the context read, unmarked
            "shown": shown,
            "steps": [step("generate", text=answer, doc_ids=[str(d.id) for d in docs])],
        }
    markers = [
        (_number(docs[e.doc_index], shown), e) for e in _evidence(reading) if 0 <= e.doc_index < len(docs)
    ]
    answer = _answer_text(reading, markers)
    citations = [_quoting(c, markers) for c in extract_citations(answer, shown)]
    chain: list[Step] = [
        step("note", text=f"evidence {hop}: {_flat(e.sentence)}", doc_ids=[str(docs[e.doc_index].id)])
        for hop, (_, e) in enumerate(markers, start=1)
    ]
    note = f"extracted ({reading.answer_type}, confidence {reading.confidence:.2f}): {reading.answer}"
    answered = step("generate", text=note, doc_ids=[c["chunk_id"] for c in citations])
    emit("end", answer=answer)
    return {"answer": answer, "citations": citations, "shown": shown, "steps": [*chain, answered]}


def _quoting(citation: Citation, markers: list[tuple[int, Evidence]]) -> Citation:
    """``citation`` quoting the evidence sentence it stands for (its first one), verbatim."""
    sentence = next((_flat(e.sentence) for n, e in markers if n == citation["marker"]), "")
    return {**citation, "quote": sentence[:QUOTE_CHARS]} if sentence else citation
