"""``RagContext.prompts``: a run's own wording for prompt roles, checked like the shipped templates.

A role is a template name under ``prompts/templates/`` and its value the replacement text, in the
file's format (``[system]`` / ``[human]`` sections, plain ``{name}`` placeholders)::

    RagContext(prompts={"answer_with_citations": "[system]\\n...\\n[human]\\n{context}\\n{question}"})

The environment variable ``RAG_GRAPHS_PROMPTS`` holds the same object as JSON, or the path of a
JSON file holding it (multi-line prompts read better in a file). Only the environment may name a
file: a passed value, as a client of a served graph sends it, is always the texts themselves, so
a client cannot make the server read a path.

A client of a served graph may replace prompts (``runtime.served_context`` lays its replacements
over the deployment's): a prompt is the asker's own instructions to the model about its own run,
as the question is. It widens no access (every search still runs under the deployment's filter
and access fields, so the model sees only passages this run may read), names no service or file,
and its cost is bounded (``MAX_REPLACEMENT_CHARS`` per role, the same token budgets). What must
not change is what protects the asker from the documents: every replacement keeps each
placeholder the code fills with fenced passages, and the shipped notice that fenced text is
data, word for word on a line of its own (``rag_graphs.prompts.notice``; no other line may hold a
fence tag): a replacement that drops a fenced slot, or rewords, negates or drops the notice, is
refused (``rag_graphs.prompts.replacement``).
A deployment should not count on its own wording as policy ("never mention X"): the question
steers the model as much as a prompt does, which is why access lives in the filters, not in words.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from langchain_core.prompts import ChatPromptTemplate
from pydantic import AfterValidator, BeforeValidator

from rag_graphs.prompts import replacement

ENV = "RAG_GRAPHS_PROMPTS"

NOT_RUN_PROMPTS = {
    "picture_describe": "ingestion (picture captions)",
    "picture_extract_text": "ingestion (picture captions)",
    "picture_chart": "ingestion (picture captions)",
    "raptor_summary": "the RAPTOR build",
    "community_report": "the community-report build (rag-graphs graph communities)",
    "judge_correctness": "the evaluator's judges",
    "judge_grounded": "the evaluator's judges",
    "judge_citation": "the evaluator's judges",
    "judge_pairwise": "the evaluator's pairwise comparison",
    "synth_bridge_question": "the evaluator's question writer (rag-graphs eval synth)",
    "synth_single_question": "the evaluator's question writer (rag-graphs eval synth)",
}
"""Roles no run reads: a replacement of one would be silently ignored, so it is refused."""


def where(role: str) -> str:
    """How an error names a replaced role: ``RagContext.prompts.<role>``."""
    return f"RagContext.prompts.{role}"


def run_templates(prompts: Mapping[str, str]) -> dict[str, ChatPromptTemplate]:
    """Each replaced role's template (checked, and built once per text: ``replacement`` caches).

    Raises:
        ValueError: one line naming ``RagContext.prompts.<role>``: a role no run reads, or a text
            ``replacement`` refuses.
    """
    out = {}
    for role, text in prompts.items():
        if role in NOT_RUN_PROMPTS:
            raise ValueError(f"{where(role)}: read by {NOT_RUN_PROMPTS[role]}, never by a run")
        out[role] = replacement(role, text, where(role))
    return out


def _texts(value: Any) -> Any:
    """An object of role -> text, each error naming the role (pydantic's would not)."""
    if not isinstance(value, Mapping):
        raise ValueError(
            f"RagContext.prompts: expected an object of role -> prompt text, got {type(value).__name__}"
        )
    for role, text in value.items():
        if not isinstance(text, str):
            raise ValueError(f"{where(str(role))}: expected the prompt's text, got {type(text).__name__}")
    return value


def _checked(prompts: dict[str, str]) -> dict[str, str]:
    run_templates(prompts)
    return prompts


def from_env(raw: str) -> Any:
    """``RAG_GRAPHS_PROMPTS``'s value: a JSON object, or the path of a file holding one."""
    text = raw
    if not raw.lstrip().startswith("{"):
        path = Path(raw).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(
                f"environment variable {ENV}={raw!r}: neither a JSON object nor a readable JSON file "
                f"({exc.strerror or exc})"
            ) from None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"environment variable {ENV}={raw!r}: not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ValueError(f"environment variable {ENV}={raw!r}: expected a JSON object of role -> prompt text")
    return value


PromptTexts = Annotated[dict[str, str], BeforeValidator(_texts), AfterValidator(_checked)]
"""Role -> replacement text, every one checked (``run_templates``)."""
