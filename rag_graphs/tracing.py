"""What a traced run says about itself, so LangSmith users can filter and compare runs.

Every compiled graph carries ``metadata={"method": ...}`` and the tags
``rag-graphs`` and ``method:<name>`` (``compile_method``); every search is a
retriever run carrying the store and collection; every model call is an LLM
run carrying LangChain's own ``ls_model_name``. ``trace_config`` adds the
run-time settings (model specs, collection, k) to the root run:

    graph.invoke({"question": q}, context=ctx, config=trace_config(ctx, "ircot"))

Tracing itself is LangChain's: set ``LANGSMITH_TRACING=true`` and
``LANGSMITH_API_KEY`` (and ``LANGSMITH_PROJECT``); nothing here sends anything.

What is recorded here (trace metadata, the evaluator's ``config.json`` and
error rows) goes through ``redact``: a key in a store URL, a spec or an error
text must not end up in LangSmith or in a results file.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

from langchain_core.runnables import RunnableConfig

from ingestion.captioning import MASK, redact_url
from rag_graphs.context import RagContext

TAG = "rag-graphs"
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
_SECRET_ENV = re.compile(
    r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASS|PASSWORD|PASSWD|CREDENTIALS?)(?:_|$)", re.I
)
"""Environment variable names holding secrets: ``OPENAI_API_KEY``, ``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``;
whole ``_``-separated words only, so ``PWD`` or ``SSH_AUTH_SOCK`` (paths) are not masked in error texts."""


def redact(text: str) -> str:
    """``text`` with URL credentials and the values of secret environment variables masked.

    URLs lose their user info and secret-looking query values (``redact_url``);
    any value of an environment variable whose name looks secret
    (``OPENAI_API_KEY``, ``LANGSMITH_API_KEY``, ``*_TOKEN``, ...; 8 characters
    or more) is masked wherever it appears, e.g. quoted in an HTTP error.
    """
    text = _URL.sub(lambda m: redact_url(m.group()), text)
    secrets = {v for k, v in os.environ.items() if _SECRET_ENV.search(k) and len(v) >= 8}
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


class RedactingFilter(logging.Filter):
    """Applies ``redact`` to a log record's message and traceback before any handler sees it.

    LangGraph's retry policy logs ``Retrying task ... after <error> <message>``
    with the traceback; an HTTP client's error can quote a URL with a key or
    the key itself. Installed on those loggers when this module is imported
    (every compiled graph imports it).
    """

    LOGGERS = ("langgraph.pregel._retry",)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:  # formatters reuse exc_text when it is set
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return True


_FILTER = RedactingFilter()
for _name in RedactingFilter.LOGGERS:
    if not any(isinstance(f, RedactingFilter) for f in logging.getLogger(_name).filters):
        logging.getLogger(_name).addFilter(_FILTER)


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
            **{key: redact(value) if isinstance(value, str) else value for key, value in extra.items()},
        },
        "tags": base["tags"],
    }
