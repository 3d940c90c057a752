"""A fast stand-in entity extractor for tests that need an entity graph."""

from __future__ import annotations

import re

_NAME = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*")


def capitalised(texts: list[str]) -> list[list[str]]:
    """Every run of capitalised words is a mention (no model: builds a graph in milliseconds)."""
    return [_NAME.findall(text) for text in texts]
