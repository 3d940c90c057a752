"""What a build's model calls cost: calls and tokens, read from each reply's ``usage_metadata``.

A run counts its calls in its ``usage`` (``rag_graphs.state.Usage``); a build that calls the
model outside a run (community reports, RAPTOR summaries) counts them on its report through
``ModelUsage``, so ``rag-graphs reports build`` and ``raptor build`` say what they spent the way
a run does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage


@dataclass
class ModelUsage:
    """Model calls and their tokens (a build report's base)."""

    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def count(self, replies: Sequence[BaseMessage]) -> None:
        """Add ``replies`` (one per call; a reply without usage metadata counts no tokens)."""
        self.llm_calls += len(replies)
        for reply in replies:
            meta = getattr(reply, "usage_metadata", None) or {}
            self.input_tokens += int(meta.get("input_tokens", 0))
            self.output_tokens += int(meta.get("output_tokens", 0))

    def spent(self) -> str:
        return f"{self.llm_calls} LLM calls, {self.input_tokens} + {self.output_tokens} tokens"
