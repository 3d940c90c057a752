"""The setting vocabulary: every spec string a ``RagContext`` field takes, its parser and its check.

A check here runs when a field is set (``rag_graphs.config.fields`` attaches it), so a wrong value
fails in one line naming the field before any run starts. Nothing here builds a live object or
imports a store, search or model module: the component a spec names is built where it is used
(``rag_graphs.search.rerank.reranker_for``, ``rag_graphs.llm.web.web_tool``, ...), from the value
checked here.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from langchain_core.documents import BaseDocumentCompressor

RERANKERS = "none, mmr, llm, cross-encoder:<local dir>"
CROSS_ENCODER = "cross-encoder:"
EXPANSIONS = "none, neighbours:<N>, section"
NEIGHBOURS = "neighbours:"
SECTION = "section"
MAX_WINDOW = 100
"""Largest ``neighbours:N`` (chunks on each side of a hit; the token budget binds far earlier)."""
COMPRESSORS = "none, embeddings:<0-1>, redundant:<0-1>, llm (comma-separated to chain)"
WEB_SEARCHES = "none, duckduckgo, tavily, searxng:<http(s) url of the instance>"
WEB_PACKAGES = {"duckduckgo": ("ddgs", "rag-graphs[web]"), "tavily": ("langchain_tavily", "rag-graphs[web]")}
"""Web search engine -> (the module it needs, what to install)."""


class SearchCacheFileError(ValueError):
    """The persistent search cache's file cannot be used."""


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


def check_reranker(spec: Any) -> Any:
    """``spec`` when it names a usable reranker, else ValueError naming the setting."""
    if isinstance(spec, BaseDocumentCompressor):
        return spec
    if not isinstance(spec, str):
        raise ValueError(f"RagContext.reranker: expected a spec ({RERANKERS}) or a BaseDocumentCompressor")
    text = spec.strip()
    if text.lower() in ("none", "mmr", "llm"):
        return text.lower()
    if text.startswith(CROSS_ENCODER):
        where = Path(text[len(CROSS_ENCODER) :]).expanduser()
        if not where.is_dir():
            raise ValueError(f"RagContext.reranker={spec!r}: no cross-encoder directory at {str(where)!r}")
        return text
    raise ValueError(f"RagContext.reranker={spec!r}: unknown reranker; use {RERANKERS}")


def check_expand(spec: str) -> str:
    """``spec`` normalised when it names a usable expansion, else ValueError naming the setting."""
    text = spec.strip().lower()
    if text in ("none", SECTION):
        return text
    number = text[len(NEIGHBOURS) :]
    if text.startswith(NEIGHBOURS) and number.isascii() and number.isdigit():
        if 1 <= int(number) <= MAX_WINDOW:
            return text
        raise ValueError(
            f"RagContext.expand={spec!r}: unknown expansion: neighbours:N takes N from 1 to {MAX_WINDOW}"
        )
    raise ValueError(f"RagContext.expand={spec!r}: unknown expansion; use {EXPANSIONS}")


def check_cache_path(path: str | None) -> str | None:
    """``path`` when it can hold the persistent cache (``None`` for blank or ``none``), else
    ValueError naming the setting: a folder, or an existing file that is not SQLite, is refused
    before any run starts (it is never overwritten)."""
    if path is None or path.strip().lower() in ("", "none"):
        return None
    where = Path(path).expanduser()
    if where.is_dir():
        raise SearchCacheFileError(f"RagContext.search_cache_path={path!r}: is a folder; name a file")
    if where.is_file() and where.stat().st_size:
        with open(where, "rb") as handle:
            if handle.read(16) != b"SQLite format 3\x00":
                raise SearchCacheFileError(
                    f"RagContext.search_cache_path={path!r}: not a search cache file (not SQLite); "
                    "delete it or choose another path"
                )
    return path


def check_compress(spec: str) -> str:
    """``spec`` normalised (lower case, no spaces) when every filter in it is usable, else one
    ValueError naming the setting."""
    parts = [p.strip().lower() for p in spec.split(",")]
    if parts == ["none"]:
        return "none"
    for part in parts:
        name, _, value = part.partition(":")
        if part == "llm":
            continue
        if name in ("embeddings", "redundant") and _fraction(value) is not None:
            continue
        raise ValueError(f"RagContext.compress={spec!r}: unknown filter {part!r}; use {COMPRESSORS}")
    return ",".join(parts)


def _fraction(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 <= value <= 1 else None


def check_web_search(spec: Any) -> Any:
    """``spec`` normalised (None for ``none``) when it names a usable web search, else ValueError
    naming the setting: an unknown engine, a SearXNG address that is not an http(s) URL, or an
    engine whose package is not installed. A LangChain tool passes as it is."""
    if spec is None or not isinstance(spec, str):
        return spec
    name, _, url = spec.strip().partition(":")
    name = name.lower()
    if name in ("", "none") and not url:
        return None
    if name == "searxng":
        if urlparse(url).scheme not in ("http", "https") or not urlparse(url).netloc:
            raise ValueError(
                f"RagContext.web_search={spec!r}: searxng needs an http(s) address, "
                "e.g. searxng:http://localhost:8888"
            )
        return f"searxng:{url}"
    if name not in WEB_PACKAGES or url:
        raise ValueError(f"RagContext.web_search={spec!r}: unknown web search; use {WEB_SEARCHES}")
    module, install = WEB_PACKAGES[name]
    if find_spec(module) is None:
        raise ValueError(f"RagContext.web_search={spec!r} needs {module}: pip install '{install}'")
    return name


OWN_RETRIEVER = "RagContext.retriever"


def own_retriever_refusal(ctx: Any) -> str | None:
    """Why ``ctx`` (a ``RagContext`` with ``retriever`` set) cannot run, in one line naming the
    field and the fix; None when it can: the options that read the Milvus store are refused."""
    store_only = {  # field: (refused, why it needs the store, the fix)
        "search_mode": (
            ctx.search_mode not in ("dense", "auto"),  # auto: dense, the one search it has
            "hybrid (BM25) and graph search (the hipporag method) read the Milvus store",
            "search_mode='dense'",
        ),
        "search_unit": (
            ctx.search_unit != "chunk",
            "sentence search reads the store's sentence rows",
            "search_unit='chunk'",
        ),
        "expand": (
            ctx.expand != "none",
            "neighbour expansion reads the store's reading order",
            "expand='none'",
        ),
    }
    for name, (wrong, why, fix) in store_only.items():
        if wrong:
            return (
                f"{OWN_RETRIEVER} (your own retriever) with {name}={getattr(ctx, name)!r}: {why}; set {fix} "
                f"(RAG_GRAPHS_{name.upper()}) or leave {OWN_RETRIEVER} unset to search the Milvus store"
            )
    if ctx.search_filter or ctx.tenant or ctx.tags or ctx.sources:
        return (
            f"{OWN_RETRIEVER} (your own retriever) with search_filter/tenant/tags/sources: these are Milvus "
            "expressions; filter in your retriever instead (e.g. vectorstore.as_retriever(search_kwargs="
            f"{{'filter': ...}})), or leave {OWN_RETRIEVER} unset to search the Milvus store"
        )
    return None
