"""Milvus filter expressions: quoted literals, id and access filters, and the safety check every
user-given filter passes before it reaches a search."""

from __future__ import annotations

from collections.abc import Sequence

from rag_graphs.store.fields import PRIMARY_FIELD, TAGS_FIELD, TENANT_FIELD


def quote(value: str) -> str:
    """Quote ``value`` as a Milvus expression string literal (no expression injection)."""
    escaped = (
        str(value)
        .replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{escaped}"'


def ids_filter(ids: list[str] | tuple[str, ...]) -> str:
    """A Milvus filter expression matching exactly the chunks with these ids."""
    return f"{PRIMARY_FIELD} in [{', '.join(quote(x) for x in ids)}]"


def access_filter(
    *, tenant: str | None = None, tags: Sequence[str] = (), sources: Sequence[str] = ()
) -> str | None:
    """A Milvus expression admitting only the chunks a caller may see (None: no restriction).

    ``tenant`` must match exactly, at least one of ``tags`` must be on the chunk,
    ``source`` must be one of ``sources``. Every value is quoted, so no value
    can change the expression's meaning.
    """
    parts = []
    if tenant is not None:
        parts.append(f"{TENANT_FIELD} == {quote(tenant)}")
    if tags:
        parts.append(f"json_contains_any({TAGS_FIELD}, [{', '.join(quote(t) for t in tags)}])")
    if sources:
        parts.append(f"source in [{', '.join(quote(s) for s in sources)}]")
    return " and ".join(parts) or None


_CLOSING = {")": "(", "]": "["}


def check_filter(expr: str) -> str:
    """``expr`` when it is one self-contained expression, else ``ValueError`` saying why.

    Self-contained: its string literals end and its brackets balance, never closing one
    it did not open. Wrapped in parentheses it is then a single operand that nothing
    after it can be pulled into: ``1==1) or (1==1`` would otherwise turn
    ``(filter) and (tenant == "acme")`` into ``(1==1) or (1==1) and (...)``, and a
    quote left open would swallow the access expression into a string.
    """
    stack: list[str] = []
    quote_char: str | None = None
    escaped = False
    for pos, char in enumerate(expr):
        if quote_char:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote_char:
                quote_char = None
        elif char in "\"'":
            quote_char = char
        elif char in "([":
            stack.append(char)
        elif char in _CLOSING:
            if not stack or stack.pop() != _CLOSING[char]:
                raise ValueError(
                    f"search filter {expr!r}: {char!r} at position {pos} closes nothing it opened "
                    "(a filter must be one balanced expression)"
                )
    if quote_char:
        raise ValueError(f"search filter {expr!r}: a string literal opened with {quote_char} never ends")
    if stack:
        raise ValueError(f"search filter {expr!r}: {stack[-1]!r} is never closed")
    if not expr.strip():
        raise ValueError("search filter is blank (use None for no filter)")
    return expr


def all_of(*exprs: str | None) -> str | None:
    """The conjunction of the given expressions (None when there are none).

    Each is checked to be one self-contained expression (``check_filter``) and
    parenthesised, so no expression can widen another: an operator's filter
    cannot cancel the access labels it is combined with.
    """
    present = [check_filter(e) for e in exprs if e]
    if len(present) <= 1:
        return present[0] if present else None
    return " and ".join(f"({e})" for e in present)
