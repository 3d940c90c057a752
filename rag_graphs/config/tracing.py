"""What a traced run says about itself, so LangSmith users can filter and compare runs.

Every compiled graph carries ``metadata={"method": ...}`` and the tags
``rag-graphs`` and ``method:<name>`` (``compile_method``); every search is a
retriever run carrying the store, the collection and the search that ran
(``search_mode``: ``graph``, ``hybrid`` or ``dense``, what ``auto`` resolved to); every model call is an LLM
run carrying LangChain's own ``ls_model_name``. ``trace_config`` adds the
run-time settings (model specs, collection, k) to the root run:

    graph.invoke({"question": q}, context=ctx, config=trace_config(ctx, "ircot"))

Tracing itself is LangChain's: set ``LANGSMITH_TRACING=true`` and
``LANGSMITH_API_KEY`` (and ``LANGSMITH_PROJECT``); nothing here sends anything.

What is recorded here (trace metadata, the evaluator's ``config.json`` and
error rows) goes through ``rag_graphs.support.redaction.redact``: a key in a
store URL, a spec or an error text must not end up in LangSmith or in a results file.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from rag_graphs.config.context import RagContext
from rag_graphs.support.redaction import REDACTING_FILTER, redact, redact_url

TAG = "rag-graphs"
_REDACTED_LOGGERS = ("langgraph.pregel._retry",)
"""Loggers whose records go through ``redact``: LangGraph's retry policy logs ``Retrying task ...
after <error> <message>`` with the traceback, and an HTTP client's error can quote a key."""
REDACTING_FILTER.attach(_REDACTED_LOGGERS)  # every compiled graph imports this module


def spec_name(value: Any) -> str:
    """A model spec string (redacted), or the class name of a model instance: a name, never a key."""
    return redact(value) if isinstance(value, str) else type(value).__name__


def method_config(method: str) -> RunnableConfig:
    """The metadata and tags every run of ``method``'s compiled graph carries."""
    return {"metadata": {"method": method}, "tags": [TAG, f"method:{method}"]}


def trace_config(ctx: RagContext, method: str, **extra: Any) -> RunnableConfig:
    """A run config naming the method and the settings it ran with (root-run metadata)."""
    base = method_config(method)
    return {
        "run_name": method,
        "metadata": {
            **base["metadata"],
            "chat_model": spec_name(ctx.chat_model),
            "embeddings": spec_name(ctx.embeddings),
            "store_uri": redact_url(ctx.store_uri),
            "collection": ctx.collection,
            "k": ctx.k,
            "search_mode": ctx.search_mode,
            "prompts": sorted(ctx.prompts),  # the roles this run words its own way (RagContext.prompts)
            **{key: redact(value) if isinstance(value, str) else value for key, value in extra.items()},
        },
        "tags": base["tags"],
    }
