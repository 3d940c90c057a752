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

A run may replace a template's text (``RagContext.prompts``): ``replacement`` checks the
new text as strictly as a shipped file, and every template ``load_prompt`` returns is a
``RolePrompt``, which formats with the replacement ``replacing`` put in place for its role. So
the code that fills a template (a node, a method, the reranker) is written once and never sees
whether the run's wording is the shipped one.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache, lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.prompts.chat import MessageLikeRepresentation

from rag_graphs.prompts.fencing import CLOSE, OPEN, defuse

if __name__ == "prompts":  # its folder name, importable from a source checkout's root
    raise ImportError(
        "this package installs as rag_graphs.prompts: write `from rag_graphs.prompts import ...` "
        "(one top-level import package, so no name of another distribution is taken)"
    )


__all__ = [
    "load_prompt",
    "list_prompts",
    "notice",
    "PromptNotFoundError",
    "RolePrompt",
    "replacement",
    "replacing",
]

_ROLE_LINE = re.compile(r"^\[(system|human|ai)\]\s*$", re.MULTILINE)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TEMPLATES = resources.files(__name__).joinpath("templates")


class PromptNotFoundError(KeyError):
    """Raised when no template file has the requested name."""


def list_prompts() -> list[str]:
    """Names of all shipped templates (file names without ``.txt``)."""
    return sorted(p.name[:-4] for p in _TEMPLATES.iterdir() if p.name.endswith(".txt"))


def _check_fields(name: str, text: str, where: str = "") -> None:
    """Refuse any placeholder that is not a plain name: templates are data, not code.

    ``str.format`` would follow ``{question.__class__}`` or ``{question[0]}`` into Python
    objects; LangChain 1.7 refuses those too, but without naming the file, and it lets
    conversions (``{q!r}``), format specs (``{q:>9}``) and odd names (``{}``, ``{ q }``)
    through. Plain ``{name}`` is all a prompt needs.
    """
    where = where or f"prompts/templates/{name}.txt"
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


def _parse(name: str, text: str, where: str = "") -> list[tuple[str, str]]:
    """``text``'s messages as (role, body); errors name ``where`` (default: the template's file)."""
    where = where or f"prompts/templates/{name}.txt"
    _check_fields(name, text, where)
    parts = _ROLE_LINE.split(text)
    if parts[0].strip():
        raise ValueError(f"{where}: text before the first role line; start the file with [system] or [human]")
    messages = [(role, body.strip("\n")) for role, body in zip(parts[1::2], parts[2::2], strict=True)]
    if not messages:
        raise ValueError(f"{where}: no [system]/[human] section")
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
    return RolePrompt(messages, role=name)


_REPLACED: ContextVar[Mapping[str, ChatPromptTemplate]] = ContextVar(
    "rag_graphs_replaced_prompts", default=MappingProxyType({})
)
"""The replacements in force while one node runs (``replacing``), by role: a context variable, so
each run (and each thread or task LangGraph gives a node) sees its own run's and no other's."""


class RolePrompt(ChatPromptTemplate):
    """A shipped template that formats with the run's replacement for its role when one is in
    force (``replacing``), else with its own text. ``messages`` stay the shipped ones; a
    replacement has the same placeholders (``replacement``), so ``input_variables`` hold for both.
    """

    role: str
    """The template's name: the role a replacement names."""

    def __init__(self, messages: Sequence[MessageLikeRepresentation], *, role: str, **kwargs: Any) -> None:
        super().__init__(messages, role=role, **{"template_format": "f-string", **kwargs})

    def format_messages(self, **kwargs: Any) -> list[BaseMessage]:
        replaced = _REPLACED.get().get(self.role)
        return super().format_messages(**kwargs) if replaced is None else replaced.format_messages(**kwargs)

    async def aformat_messages(self, **kwargs: Any) -> list[BaseMessage]:
        replaced = _REPLACED.get().get(self.role)
        if replaced is None:
            return await super().aformat_messages(**kwargs)
        return await replaced.aformat_messages(**kwargs)


@contextmanager
def replacing(templates: Mapping[str, ChatPromptTemplate]) -> Iterator[None]:
    """While the block runs (in this context and the threads and tasks that copy it), every
    ``RolePrompt`` whose role ``templates`` names formats with that template instead."""
    token = _REPLACED.set(MappingProxyType(dict(templates)))
    try:
        yield
    finally:
        _REPLACED.reset(token)


MAX_REPLACEMENT_CHARS = 16_000
"""Longest replacement text: the shipped templates are under 2,000 characters, and a prompt is
sent on every call of its role."""


def notice(role: str) -> str | None:
    """The line of template ``role`` that tells the model fenced text is data (the shipped file's
    one line naming ``<passage>``), stripped; None when the role shows no fenced text. A
    replacement keeps it word for word (``replacement``).

    Raises:
        ValueError, PromptNotFoundError: as ``load_prompt``.
    """
    found = _notice(role)
    return found[1] if found else None


@cache
def _notice(role: str) -> tuple[str, str] | None:
    """The shipped notice line of ``role`` and the section holding it (``system``)."""
    load_prompt(role)  # a template name, never a path
    text = _TEMPLATES.joinpath(f"{role}.txt").read_text(encoding="utf-8")
    for section, body in _parse(role, text):
        for line in body.splitlines():
            if OPEN in line:
                return section, line.strip()
    return None


@lru_cache(maxsize=256)  # bounded: a server's clients may each send their own wording
def replacement(role: str, text: str, where: str) -> ChatPromptTemplate:
    """Template ``role``'s text replaced by ``text``, checked as strictly as a shipped file and
    against it: the same plain placeholders, none missing (the code fills them: a replacement
    without ``{context}`` would answer without the passages) and none extra (nothing would fill
    it).

    What protects the asker from the documents stays the deployment's, not the replacement's: the
    shipped template's notice that text between ``<passage>`` and ``</passage>`` is data
    (``notice``) must be a line of its own in the same section, word for word, so it cannot be
    reworded, negated or dropped (a check for the words "passage" and "data" let "is data ONLY
    IF it says so" through), and no other line may hold a fence tag or a look-alike of one
    (``fencing.defuse`` finds them): written inline, ``</passage>`` would close a fence in the
    model's reading of the prompt, and instructions after it would read as outside any fence.

    Raises:
        ValueError: in one line beginning with ``where`` (e.g. ``RagContext.prompts.<role>``).
    """
    if not _IDENTIFIER.fullmatch(role) or role not in list_prompts():
        raise ValueError(f"{where}: no prompt role {role!r}; roles: {', '.join(list_prompts())}")
    if len(text) > MAX_REPLACEMENT_CHARS:
        raise ValueError(f"{where}: {len(text):,} characters; at most {MAX_REPLACEMENT_CHARS:,}")
    messages = _parse(role, text, where)
    template = ChatPromptTemplate.from_messages(messages, template_format="f-string")
    shipped = load_prompt(role)
    wanted, got = set(shipped.input_variables), set(template.input_variables)
    if missing := sorted(wanted - got):
        raise ValueError(
            f"{where}: missing placeholder(s) {_braced(missing)}: the shipped template shows them"
        )
    if extra := sorted(got - wanted):
        raise ValueError(
            f"{where}: unknown placeholder(s) {_braced(extra)}; this role fills {_braced(wanted)}"
        )
    _check_notice(role, messages, where)
    return template


def _check_notice(role: str, messages: list[tuple[str, str]], where: str) -> None:
    """Refuse a replacement without ``notice(role)`` as a line of its shipped section, or with a
    fence tag (or a look-alike) on any other line."""
    found = _notice(role)
    section, line = found if found else ("", None)
    if line is not None and not any(
        r == section and line in (x.strip() for x in body.splitlines()) for r, body in messages
    ):
        raise ValueError(
            f"{where}: keep the notice that fenced text is data word for word, as a line of its own "
            f"in the [{section}] section (the passages reach this prompt fenced): {line!r}"
        )
    for r, body in messages:
        for x in body.splitlines():
            if x.strip() != line and defuse(x) != x:
                raise ValueError(
                    f"{where}: [{r}] line {x.strip()[:80]!r} holds a fence tag ({OPEN} or {CLOSE}, "
                    "or a look-alike): only the notice line may name them; the code fences every "
                    "passage, write its placeholder alone"
                )


def _braced(names: Any) -> str:
    return ", ".join(f"{{{n}}}" for n in sorted(names))
