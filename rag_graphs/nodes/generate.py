"""The shared generate nodes: the final answer with citations, and intermediate answers."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.prompts import ChatPromptTemplate

from rag_graphs.config.context import RagContext
from rag_graphs.llm.calls import Body, Call
from rag_graphs.nodes.chat import chat_model, llm_usage
from rag_graphs.nodes.events import emit, step
from rag_graphs.nodes.inputs import answer_documents, demonstrations_input, latest_documents, template_inputs
from rag_graphs.nodes.loop import STOP_SINGLE_PASS, Stop
from rag_graphs.nodes.model_node import ModelNode
from rag_graphs.nodes.reading import is_extract, read_answer
from rag_graphs.prompts import load_prompt
from rag_graphs.state import Outcome, RagState, Step, Usage
from rag_graphs.text.answers import ANSWER_STOPS, UNKNOWN, clean_answer, short_answer
from rag_graphs.text.citations import Numbered, extract_citations, format_context, number_passages


def answer_call(ctx: RagContext, messages: list[BaseMessage]) -> Body[tuple[AIMessage, Usage]]:
    """One answer call: the chat model with ``ANSWER_STOPS``, so it stops where small models
    start inventing the prompt's next turn (``clean_answer`` cuts whatever still gets through)."""
    reply = yield Call(chat_model(ctx).bind(stop=ANSWER_STOPS), messages)
    return reply, llm_usage(reply)


_DONT_KNOW = re.compile(
    r"\b(?:do not|don't|does not|doesn't|cannot|can't) (?:know|say|tell)\b", re.IGNORECASE
)
"""A short answer that declines (the answer prompts ask for "I do not know" when the passages lack it)."""


def prompt_text(name: str, **values: str) -> str:
    """The text of one-message template ``name`` filled with ``values`` (answer texts users may reword)."""
    return str(load_prompt(name).format_messages(**values)[-1].content)


def outcome_of(state: RagState, answer: str, docs: list[Document]) -> Outcome:
    """How the run ended, from typed state: a spent budget first (the answer is unconfirmed),
    then no evidence (it searched yet answers from no passage, or the answer declines)."""
    if state.get("stop_kind") == "budget":
        return "budget_exhausted"
    if (state.get("searches") and not docs) or _DONT_KNOW.search(short_answer(answer)):
        return "no_evidence"
    return "answered"


def finish(state: RagState, answer: str, docs: list[Document], *, stop: Stop | None = None) -> dict:
    """The closing fields every final answer carries: ``outcome``, ``stop_kind`` and
    ``stop_reason`` (a method without a loop made one pass) and the answer, which on a spent
    budget says so the way the guide does (``prompts/templates/budget_exhausted.txt``, after
    the short answer, so the first line stays the answer the evaluator scores). A node that
    answers and stops at once (ReAct's and IterDRAG's final answer) passes its ``stop``."""
    outcome = outcome_of(state, answer, docs)
    kind = state.get("stop_kind")
    if stop is None:
        stop = Stop(kind, state.get("stop_reason", "")) if kind else STOP_SINGLE_PASS
    if outcome == "budget_exhausted":
        answer = prompt_text("budget_exhausted", answer=answer, reason=stop.reason)
    return {"answer": answer, "outcome": outcome, "stop_kind": stop.kind, "stop_reason": stop.reason}


def _stop_note(state: RagState) -> list[Step]:
    if state.get("stop_kind") in (None, "enough"):
        return []
    return [step("note", text=f"answering from what was gathered: {state.get('stop_reason')}")]


def numbered_context(
    template: ChatPromptTemplate, docs: list[Document], numbering: list[Document]
) -> Numbered:
    """The passages an answer prompt shows, numbered, and the numbering its markers resolve
    against: none when the template shows no passages (``{context}``), so nothing is cited."""
    if "context" not in template.input_variables:
        return Numbered("", [])
    return number_passages(docs, numbering)


def make_generate(
    prompt: str = "answer_with_citations",
    *,
    notes: Callable[[Any], str] | None = None,
    final: bool = True,
    carry_numbers: bool = False,
    extracts: Callable[[Any], bool] | None = None,
) -> ModelNode:
    """Build a generate node that answers from all gathered passages with template ``prompt``.

    Methods that need other wording pass another template name (for example
    one that also shows intermediate answers as ``{notes}``); ``notes`` renders
    a method's own notes instead (IRCoT's chain of thought, ReAct's scratchpad).
    The node logic (numbered passages, citation parsing, usage, the budget
    note, ``finish``) stays here. ``final=False`` writes a draft a later node
    judges and finishes (Self-RAG's check). The passages are numbered ``[1]`` to
    ``[n]`` in ranking order; ``carry_numbers=True`` goes on with the run's numbering
    (``shown``) instead, for notes that quote passages under it (ReAct's observations).
    Either way the answer's markers resolve against the numbering this prompt showed.

    When the run's reader is ``extract`` (``RagContext.reader``; ``rag_graphs.nodes.reading``), a
    template that shows passages is not filled: the reader reads the same passages in the same
    numbering, with no model call. ``extracts(state)`` may say no for a run the reader cannot
    answer (GraphRAG's global search, whose answer is a summary of themes).
    """
    template = load_prompt(prompt)
    shows_passages = "context" in template.input_variables

    def generate(state: RagState, ctx: RagContext) -> Body[dict]:
        docs = answer_documents(state)
        if shows_passages and is_extract(ctx) and (extracts is None or extracts(state)):
            numbering = state.get("shown", []) if carry_numbers else []
            read = read_answer(state, ctx, docs, numbering)
            if not final:
                return read
            read["steps"] = [*_stop_note(state), *read["steps"]]
            return read | finish(state, read["answer"], docs)
        numbered = numbered_context(template, docs, state.get("shown", []) if carry_numbers else [])
        extra = demonstrations_input(template, ctx, state["question"]) | {"context": numbered.text}
        extra |= {"notes": notes(state)} if notes else {}
        messages = template.format_messages(**template_inputs(template, state, **extra))
        emit("start", passages=len(docs))
        reply, used = yield from answer_call(ctx, messages)
        answer = clean_answer(str(reply.content))
        citations = extract_citations(answer, numbered.shown)
        emit("end", answer=answer)
        answered = step("generate", text=answer, doc_ids=[c["chunk_id"] for c in citations])
        update = {
            "answer": answer,
            "citations": citations,
            "shown": numbered.shown,
            "steps": [*_stop_note(state), answered] if final else [answered],
            "usage": used,
        }
        return (update | finish(state, answer, docs)) if final else update

    return ModelNode(generate, "generate")


def make_intermediate(prompt: str = "intermediate_answer", *, name: str = "intermediate") -> ModelNode:
    """Build a node that answers the current query from the latest retrieval only.

    Its one-sentence answer is appended to ``sub_answers`` (query, answer), so
    the next query and the final answer can build on it (the bridge entity of
    a multi-hop question).
    """
    template = load_prompt(prompt)

    def intermediate(state: RagState, ctx: RagContext) -> Body[dict]:
        docs = latest_documents(state)
        query = state.get("query") or state["question"]
        inputs = template_inputs(template, state, context=format_context(docs), query=query)
        reply, used = yield from answer_call(ctx, template.format_messages(**inputs))
        text = clean_answer(str(reply.content))
        answer = text.splitlines()[0] if text != UNKNOWN else "unknown"
        emit("end", query=query, answer=answer)
        return {
            "sub_answers": [{"query": query, "answer": answer}],
            "steps": [step("generate", query=query, text=answer, doc_ids=[str(d.id) for d in docs])],
            "usage": used,
        }

    return ModelNode(intermediate, name)


generate = make_generate()
