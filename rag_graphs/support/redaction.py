"""Keys never leave the process: URLs, texts and log records are masked before they are shown.

A URL becomes a captioner's name (stored with every picture chunk), a trace's
store URI or a results file's field; an error text can quote a URL or a key
sent in a header; third-party clients log request URLs when a call fails. One
module masks them all, the same way, at the bottom of the layers (``support``) so that every
layer, ingestion and settings included, can use it (docs/architecture.md).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "***"
SECRET_NAME = re.compile(r"key|token|secret|pass|pwd|sig|auth|cred", re.IGNORECASE)
"""URL query parameter names whose values are treated as secrets (``api_key``, ``key``, ``sig`` ...)."""
SECRET_ENV = re.compile(
    r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASS|PASSWORD|PASSWD|CREDENTIALS?)(?:_|$)", re.I
)
"""Environment variable names holding secrets: ``OPENAI_API_KEY``, ``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``;
whole ``_``-separated words only, so ``PWD`` or ``SSH_AUTH_SOCK`` (paths) are not masked in error texts."""
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def redact_url(url: str) -> str:
    """``url`` with its user info and secret-looking query values masked.

    ``https://user:pw@host`` becomes ``https://***@host``, ``?api_key=k`` becomes
    ``?api_key=***`` (any parameter named like ``SECRET_NAME``). Anything that
    is not an absolute URL (a path, a model spec) is returned unchanged.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if not parts.scheme or not parts.netloc:
        return url
    netloc = f"{MASK}@{parts.netloc.rpartition('@')[2]}" if "@" in parts.netloc else parts.netloc
    query = "&".join(
        f"{name}={MASK}" if sep and SECRET_NAME.search(unquote(name)) else f"{name}{sep}{value}"
        for name, sep, value in (piece.partition("=") for piece in parts.query.split("&") if piece)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact(text: str) -> str:
    """``text`` with URL credentials and the values of secret environment variables masked.

    URLs lose their user info and secret-looking query values (``redact_url``);
    any value of an environment variable whose name looks secret
    (``OPENAI_API_KEY``, ``LANGSMITH_API_KEY``, ``*_TOKEN``, ...; 8 characters
    or more) is masked wherever it appears, e.g. quoted in an HTTP error.
    """
    text = _URL.sub(lambda m: redact_url(m.group()), text)
    secrets = {v for k, v in os.environ.items() if SECRET_ENV.search(k) and len(v) >= 8}
    return mask(text, secrets)


def mask(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each secret replaced by ``MASK`` (longest first)."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def url_secrets(url: str) -> set[str]:
    """The secret parts of ``url`` as they appear in text: user info and secret query values.

    For masking the raw values wherever a client quotes them (``redact_url``
    masks only the URL as a whole); parts under 4 characters are left out.
    """
    parts = urlsplit(url)
    found = {parts.netloc.rpartition("@")[0]} if "@" in parts.netloc else set()
    # the password alone (requests sends it as Basic auth)
    found |= {unquote(p.split(":")[-1]) for p in found}
    for piece in parts.query.split("&"):
        name, sep, value = piece.partition("=")
        if sep and SECRET_NAME.search(unquote(name)):
            found |= {value, unquote(value)}
    return {s for s in found if len(s) >= 4}


class RewritingFilter(logging.Filter):
    """A log filter that rewrites a record's message with ``clean`` (and never drops a record).

    Subclasses say what ``clean`` masks; only records that change are rewritten.
    """

    def clean(self, text: str) -> str:
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = self.clean(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True

    def attach(self, names: Iterable[str]) -> None:
        """Install this filter on the loggers ``names`` (once each)."""
        for name in names:
            logger = logging.getLogger(name)
            if self not in logger.filters:
                logger.addFilter(self)


class RedactingFilter(RewritingFilter):
    """Applies ``redact`` to a log record's message and traceback before any handler sees it.

    LangGraph's retry policy logs ``Retrying task ... after <error> <message>``
    with the traceback; an HTTP client's error can quote a URL with a key or
    the key itself.
    """

    def clean(self, text: str) -> str:
        return redact(text)

    def filter(self, record: logging.LogRecord) -> bool:
        super().filter(record)
        if record.exc_info and not record.exc_text:  # formatters reuse exc_text when it is set
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return True


REDACTING_FILTER = RedactingFilter()
"""The one ``RedactingFilter`` (stateless), attached to loggers by ``rag_graphs.config.tracing``."""


class SecretScrubber(RewritingFilter):
    """Masks known secrets (values handed to ``watch``) in log records, including third-party ones.

    Docling's API client and urllib3 log the request URL (query string
    included) when a call fails or is retried; a key in the URL would land in
    the user's logs. ``watch`` adds secrets and attaches the filter to
    ``LOGGERS``; it only rewrites records that contain a secret.
    """

    LOGGERS = (
        "rag_graphs.ingestion.convert.captioning",
        "docling.utils.api_image_request",
        "urllib3.connectionpool",
        "urllib3.util.retry",
    )

    def __init__(self) -> None:
        super().__init__()
        self.secrets: frozenset[str] = frozenset()  # replaced, never mutated: other threads may be logging

    def clean(self, text: str) -> str:
        return mask(text, self.secrets)

    def watch(self, secrets: set[str]) -> None:
        self.secrets = self.secrets | secrets
        self.attach(self.LOGGERS)
