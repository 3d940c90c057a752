"""Prompt templates for every role, one file each, loaded by name.

A template file lives in ``prompts/templates/<name>.txt`` and holds one or more
messages. Each message starts with a role line in square brackets::

    [system]
    You answer questions from the numbered passages.
    [human]
    Question: {question}

Placeholders are plain f-string fields (``{question}``); write ``{{`` and ``}}``
for literal braces. Templates are data, never code: no Jinja, no eval. This
module depends on nothing else in the project (see docs/architecture.md).
"""

from __future__ import annotations

import re
import string
from functools import cache
from importlib import resources

from langchain_core.prompts import ChatPromptTemplate

if __name__ == "prompts":  # its folder name, importable from a source checkout's root
    raise ImportError(
        "this package installs as rag_graphs.prompts: write `from rag_graphs.prompts import ...` "
        "(one top-level import package, so no name of another distribution is taken)"
    )


__all__ = ["load_prompt", "list_prompts", "PromptNotFoundError"]

_ROLE_LINE = re.compile(r"^\[(system|human|ai)\]\s*$", re.MULTILINE)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TEMPLATES = resources.files(__name__).joinpath("templates")


class PromptNotFoundError(KeyError):
    """Raised when no template file has the requested name."""


def list_prompts() -> list[str]:
    """Names of all shipped templates (file names without ``.txt``)."""
    return sorted(p.name[:-4] for p in _TEMPLATES.iterdir() if p.name.endswith(".txt"))


def _check_fields(name: str, text: str) -> None:
    """Refuse any placeholder that is not a plain name: templates are data, not code.

    ``str.format`` would follow ``{question.__class__}`` or ``{question[0]}`` into Python
    objects; LangChain 1.7 refuses those too, but without naming the file, and it lets
    conversions (``{q!r}``), format specs (``{q:>9}``) and odd names (``{}``, ``{ q }``)
    through. Plain ``{name}`` is all a prompt needs.
    """
    where = f"prompts/templates/{name}.txt"
    try:
        fields = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(text) if f is not None]
    except ValueError as exc:  # a lone { or }
        raise ValueError(f"{where}: {exc}; write {{{{ and }}}} for literal braces") from exc
    for field, spec, conversion in fields:
        if not _IDENTIFIER.fullmatch(field) or spec or conversion:
            shown = field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            raise ValueError(
                f"{where}: placeholder {{{shown}}} is not a plain name; "
                "use {name} (letters, digits, _), without attribute access, indexing, ! or :"
            )


def _parse(name: str, text: str) -> list[tuple[str, str]]:
    _check_fields(name, text)
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
        ValueError: ``name`` is not a plain identifier (``../x``, ``a/b``, an
            absolute path): names pick a shipped file, never a path; or the
            file holds a placeholder that is not a plain ``{name}``.
        PromptNotFoundError: no file ``prompts/templates/<name>.txt``; the
            message lists the names that exist.
    """
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise ValueError(f"prompt name {name!r}: use a template name such as 'answer_with_citations'")
    path = _TEMPLATES.joinpath(f"{name}.txt")
    if not path.is_file():
        raise PromptNotFoundError(f"no prompt template {name!r}; available: {', '.join(list_prompts())}")
    messages = _parse(name, path.read_text(encoding="utf-8"))
    return ChatPromptTemplate.from_messages(messages, template_format="f-string")
