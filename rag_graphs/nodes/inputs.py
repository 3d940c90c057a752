"""What a node's prompt reads: the documents of the latest round and of the answer, the
demonstrations a DRAG/IterDRAG prompt shows, notes and sub-answers, and ``template_inputs``, which
draws a template's variables from the state."""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from langchain_core.prompts import ChatPromptTemplate

from rag_graphs.config.context import RagContext
from rag_graphs.search.cache import normalise
from rag_graphs.state import RagState, SubAnswer
from rag_graphs.text.citations import format_context
from rag_graphs.text.demonstrations import (
    Demonstration,
    demonstrations_path,
    format_demonstrations,
    load_demonstrations,
)


def latest_documents(state: RagState) -> list[Document]:
    """The documents the latest retrieval round found, best first ([] after a skipped repeat)."""
    by_id = {d.id: d for d in state.get("documents", [])}
    return [by_id[i] for i in state.get("latest", []) if i in by_id]


def answer_documents(state: RagState) -> list[Document]:
    """The passages an answer is generated from: the selected ``evidence`` if a method
    set one (graded, refined, arranged), else every gathered document."""
    evidence = state.get("evidence")
    return evidence if evidence is not None else state.get("documents") or []


def shown_demonstrations(ctx: RagContext, question: str) -> tuple[Demonstration, ...]:
    """The demonstrations a DRAG/IterDRAG prompt shows: the first ``num_demos`` of
    ``RagContext.demonstrations`` (none when it is ``none``), never one of ``question`` itself
    (a demonstration mined from an evaluated question would hand the model its answer)."""
    path = demonstrations_path(ctx.demonstrations)
    if not path:
        return ()
    asked = normalise(question)
    other = [d for d in load_demonstrations(path) if normalise(d.question) != asked]
    return tuple(other[: ctx.num_demos])


def demonstrations_input(template: ChatPromptTemplate, ctx: RagContext, question: str) -> dict[str, str]:
    """The demonstrations a template shows for ``question``, rendered: ``{demonstrations}`` as
    DRAG's question -> answer examples, ``{demonstration_chains}`` as IterDRAG's follow-up
    chains; ``{}`` for a template with neither."""
    wanted = {"demonstrations", "demonstration_chains"} & set(template.input_variables)
    if not wanted:
        return {}
    demos = shown_demonstrations(ctx, question)
    return {
        name: format_demonstrations(demos, ctx.num_demos, chains=name == "demonstration_chains")
        for name in wanted
    }


def format_notes(notes: list[str]) -> str:
    """Notes (intermediate answers, a chain of thought) as a bullet list, or a placeholder."""
    return "\n".join(f"- {n}" for n in notes) if notes else "(none yet)"


def format_sub_answers(answers: list[SubAnswer]) -> str:
    """Intermediate answers as ``query -> answer`` bullets."""
    return format_notes([f"{a['query']} -> {a['answer']}" for a in answers])


def template_inputs(template: ChatPromptTemplate, state: RagState, **extra: Any) -> dict[str, str]:
    """The values a template asks for, drawn from the state.

    Shared nodes are parameterised by prompt; each prompt names the state it
    needs (``question``, ``query``, ``notes`` = the intermediate answers,
    ``context`` = the answer's passages, ``answer``) and gets only that.
    A method whose notes are something else (IRCoT's chain of thought) passes them in ``extra``.
    """
    available = {
        "question": lambda: state["question"],
        "query": lambda: state.get("query") or state["question"],
        "notes": lambda: format_sub_answers(state.get("sub_answers", [])),
        "context": lambda: format_context(answer_documents(state)),
        "answer": lambda: state.get("answer", ""),
    }
    values = {}
    for name in template.input_variables:
        if name in extra:
            values[name] = extra[name]
        elif name in available:
            values[name] = available[name]()
        else:
            raise KeyError(f"prompt variable {name!r} has no source in the state")
    return values
