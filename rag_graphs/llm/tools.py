"""Tools for agent methods: a safe calculator (no eval) and the optional web-search slot."""

from __future__ import annotations

import ast
import hashlib
import operator
from collections.abc import Callable
from typing import Any

from langchain_core.documents import Document

_OPS: dict[type, Callable[..., float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
MAX_EXPONENT = 100


def calculate(expression: str) -> str:
    """Evaluate arithmetic (+ - * / // % ** and parentheses) without ``eval``.

    Returns the result, or an ``error: ...`` string: a tool result the agent
    reads, never an exception that ends the run.
    """

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
                raise ValueError(f"exponent {right} is too large")
            return _OPS[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.operand))
        raise ValueError(f"unsupported expression element: {type(node).__name__}")

    try:
        value = walk(ast.parse(expression.replace(",", "").strip(), mode="eval"))
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError, TypeError) as exc:
        return f"error: {exc}"
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def web_documents(results: Any, *, limit: int = 5) -> list[Document]:
    """Documents from a web-search tool's output, whatever its shape.

    Tools differ: Tavily returns ``[{"url", "content"}]``, DuckDuckGo a string
    or ``[{"link", "snippet"}]``, retrievers ``Document``s. Each result becomes
    one ``kind="web"`` document whose id is derived from its URL and text, so
    citations name the page it came from (web passages are not stored chunks).
    """
    if isinstance(results, dict):
        results = results.get("results", [results])
    if isinstance(results, str | Document):
        results = [results]
    docs = []
    for item in list(results or [])[:limit]:
        if isinstance(item, Document):
            text, url = (
                item.page_content,
                str(item.metadata.get("source") or item.metadata.get("url") or "web"),
            )
        elif isinstance(item, dict):
            text = str(next((item[k] for k in ("content", "snippet", "body", "text") if item.get(k)), ""))
            url = str(next((item[k] for k in ("url", "link", "href", "source") if item.get(k)), "web"))
        else:
            text, url = str(item), "web"
        if text.strip():
            digest = hashlib.sha256(f"{url}\n{text}".encode()).hexdigest()[:24]
            docs.append(
                Document(
                    id=f"web-{digest}", page_content=text.strip(), metadata={"source": url, "kind": "web"}
                )
            )
    return docs
