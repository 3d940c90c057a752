"""Prompt templates for every role, one file each, loaded by name.

A template file lives in ``prompts/templates/<name>.txt`` and holds one or more
messages. Each message starts with a role line in square brackets::

    [system]
    You answer questions from the numbered passages.
    [human]
    Question: {question}

Placeholders are plain f-string fields (``{question}``); write ``{{`` and ``}}``
for literal braces. Templates are data, never code: no Jinja, no eval. This
module depends on nothing else in the project (see DESIGN.md).
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from langchain_core.prompts import ChatPromptTemplate

__all__ = ["load_prompt", "list_prompts", "PromptNotFoundError"]

_ROLE_LINE = re.compile(r"^\[(system|human|ai)\]\s*$", re.MULTILINE)
_TEMPLATES = resources.files(__name__).joinpath("templates")


class PromptNotFoundError(KeyError):
    """Raised when no template file has the requested name."""


def list_prompts() -> list[str]:
    """Names of all shipped templates (file names without ``.txt``)."""
    return sorted(p.name[:-4] for p in _TEMPLATES.iterdir() if p.name.endswith(".txt"))


def _parse(name: str, text: str) -> list[tuple[str, str]]:
    parts = _ROLE_LINE.split(text)
    if parts[0].strip():
        raise ValueError(
            f"prompts/templates/{name}.txt: text before the first role line; "
            "start the file with [system] or [human]"
        )
    messages = [(role, body.strip("\n")) for role, body in zip(parts[1::2], parts[2::2], strict=True)]
    if not messages:
        raise ValueError(f"prompts/templates/{name}.txt: no [system]/[human] section")
    return messages


@cache
def load_prompt(name: str) -> ChatPromptTemplate:
    """Load template ``name`` as a ``ChatPromptTemplate`` (f-string format).

    Raises:
        PromptNotFoundError: no file ``prompts/templates/<name>.txt``; the
            message lists the names that exist.
    """
    path = _TEMPLATES.joinpath(f"{name}.txt")
    if not path.is_file():
        raise PromptNotFoundError(f"no prompt template {name!r}; available: {', '.join(list_prompts())}")
    messages = _parse(name, path.read_text(encoding="utf-8"))
    return ChatPromptTemplate.from_messages(messages, template_format="f-string")
