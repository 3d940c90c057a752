"""``IngestOptions``: what an ingest does with its files, as one typed, checked value.

Which files to take, how to convert, caption and label them, how to report: every setting of
``ingest(sources, *, index, options)`` but the store. As one frozen object they can be built once
(from CLI flags, a config, a notebook cell), reused across calls and compared, and they are checked
when built, so a bad label fails before any file is read and a misspelt setting is a ``TypeError``
naming it.

The access labels (``tenant``, ``tags``) start ``Unset`` (``rag_graphs.state.Unset``, the marker
state fields use): an ingest fills them from its context or the environment, while a label the
caller gave, ``tenant=None`` (public) included, is the call's own and wins. Before, ``ingest`` took
each setting as a keyword and told the two apart by which keywords were passed.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Self

from rag_graphs.entity_graph.entities import Extractor
from rag_graphs.ingestion.convert.captioning import Captioner, CaptionPrompt
from rag_graphs.ingestion.convert.converter import TIMEOUT_SECONDS, ConvertOptions
from rag_graphs.ingestion.convert.guards import MAX_FILE_BYTES
from rag_graphs.ingestion.report import FileResult
from rag_graphs.state import Unset
from rag_graphs.store.fields import TAGS_FIELD, TENANT_FIELD


@dataclass(frozen=True)
class IngestOptions:
    """How ``ingest`` turns files into stored chunks (where they go is ``ingest``'s ``index``).

    Attributes:
        include: glob patterns of the only files to take (all when empty).
        exclude: glob patterns of files to skip.
        follow_links: follow symlinks that lead outside the folder or glob root, and links to
            folders (off: such links are skipped and reported; see ``rag_graphs.ingestion.convert.discover``).
        captioner: who describes pictures: a spec (``fallback``, ``tesseract``,
            ``api:<url>#<model>``, ``ollama:granite3.2-vision``...) or a ``Captioner``.
        caption_prompt: ``describe``, ``extract_text`` or ``chart``.
        allow_fetch: let HTML/Markdown fetch the remote or local images they reference.
        max_file_bytes: files over this size are refused (reported, not read).
        docling_serve: URL of a Docling Serve instance to convert with (instead of in process).
        timeout: seconds one file may spend in Docling (which then runs in a worker process,
            killed and replaced when a file overruns: the file is reported, the batch goes on);
            None converts in this process with no limit.
        tenant: access label stored on every chunk; searches with ``RagContext(tenant=...)``
            see only their tenant's chunks. Unset (the default): the ingest's context's
            (``RagContext.tenant``, ``RAG_GRAPHS_TENANT``); ``None`` says public, whatever they say.
        tags: access labels stored on every chunk (``RagContext(tags=...)`` admits a chunk
            carrying any of them); unset as ``tenant`` is, ``()`` says none. Re-ingesting with
            other labels replaces the file's chunks.
        entities: who finds each chunk's entities for graph search (what ``search_mode="auto"``,
            the default, searches with when the collection has them; the ``hipporag`` method):
            ``auto`` (the default: spaCy NER offline, for a new collection or one that has a graph
            already; a collection stored without one stays without, since only the new chunks
            would join it: ``rag-graphs graph build`` gives it one), ``spacy``,
            ``spacy:<pipeline>``, or a callable ``texts -> mentions per text`` (e.g.
            ``load_extractor("llm", chat_model=m)``). None (``--no-graph``): no new graph; a
            collection that already has one keeps it current with ``spacy``.
        force: convert every file even when it is unchanged since it was stored (off: a file
            whose bytes and chunk settings match what the collection holds is skipped before
            conversion; see ``rag_graphs.store.files``).
        progress: show a progress bar.
        on_file: called with each file's result as soon as it is stored or has failed (live
            reporting, a log of what is stored so far).

    ``include``, ``exclude`` and ``tags`` accept any iterable of strings (or one string)
    and are kept as tuples.

    Raises:
        TypeError: a setting it has not (the message names it, the closest one and every one).
        ValueError: ``tenant`` is not a non-empty string, or a tag is not one; ``max_file_bytes``
            is not a whole number of bytes >= 1; ``timeout`` is not None or a finite number
            of seconds > 0 (NaN would disable the hang guard, a negative one refuse every file).
    """

    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    follow_links: bool = False
    captioner: str | Captioner | None = None
    caption_prompt: CaptionPrompt = "describe"
    allow_fetch: bool = False
    max_file_bytes: int = MAX_FILE_BYTES
    docling_serve: str | None = None
    timeout: float | None = TIMEOUT_SECONDS
    tenant: str | None | Unset = Unset(None)
    tags: Sequence[str] | Unset = Unset(())
    entities: str | Extractor | None = "auto"
    force: bool = False
    progress: bool = True
    on_file: Callable[[FileResult], None] | None = None

    def __new__(cls, *args: Any, **settings: Any) -> Self:
        """Refuse a setting ``IngestOptions`` has not, naming it, the closest one and every one."""
        names = [f.name for f in fields(cls)]
        unknown = [name for name in settings if name not in names]
        if unknown:
            guess = difflib.get_close_matches(unknown[0], names, n=1)
            raise TypeError(
                f"IngestOptions: unknown setting{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(map(repr, unknown))}{f' (did you mean {guess[0]!r}?)' if guess else ''}; "
                f"its settings are {', '.join(names)}"
            )
        return super().__new__(cls)

    def __post_init__(self) -> None:
        for name in ("include", "exclude", "tags"):
            value: Iterable[str] | Unset = getattr(self, name)
            if not isinstance(value, Unset):
                object.__setattr__(self, name, (value,) if isinstance(value, str) else tuple(value))
        access_labels(_value(self.tenant), _value(self.tags))  # checked now, before any file is read
        check_bounds(self.max_file_bytes, self.timeout)

    @property
    def labels(self) -> dict[str, Any]:
        """The access labels stored on every chunk (see ``access_labels``; an unset one as none)."""
        return access_labels(_value(self.tenant), _value(self.tags))

    def convert_options(self) -> ConvertOptions:
        """The conversion settings among these options."""
        return ConvertOptions(
            allow_fetch=self.allow_fetch,
            max_file_bytes=self.max_file_bytes,
            docling_serve=self.docling_serve,
            timeout=self.timeout,
        )

    def chunk_settings(self, embeddings: str, model: str) -> str:
        """A hash of what, besides a file's bytes, shapes its stored chunks: the chunker and its
        tokenizer (``embeddings``, the spec whose tokenizer bounds chunks), the embedding model
        (``model``, its identity), the captioner and its prompt, how files convert (fetching,
        Docling Serve, whether Docling's layout models are here, Docling's version) and the
        access labels. A file skipped as unchanged must have been stored under the same one."""
        from importlib.metadata import PackageNotFoundError, version

        from rag_graphs.ingestion.convert.chunking import CONTEXT_ITEMS
        from rag_graphs.ingestion.convert.converter import layout_models_present
        from rag_graphs.store.fields import MAX_CHUNK_CHARS

        def installed(name: str) -> str:
            try:
                return version(name)
            except PackageNotFoundError:
                return ""

        captioner, kind = self.captioner, type(self.captioner)
        described = (
            captioner
            if captioner is None or isinstance(captioner, str)
            else f"{kind.__module__}.{kind.__qualname__}:{getattr(captioner, 'name', '')}"
        )
        settings = {
            "chunks": CHUNKS_VERSION,
            "chunker": ["HybridChunker", "merge_peers", MAX_CHUNK_CHARS, CONTEXT_ITEMS],
            "docling": [installed("docling"), installed("docling-core")],
            "tokenizer": embeddings,
            "embeddings": model,
            "captioner": described or "fallback",
            "caption_prompt": self.caption_prompt,
            "allow_fetch": self.allow_fetch,
            "docling_serve": self.docling_serve,
            "layout": False if self.docling_serve else layout_models_present(),
            "labels": self.labels,
        }
        return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:32]


CHUNKS_VERSION = 1
"""Bump when chunking changes what a file gives: files recorded before then convert again."""

LABEL_ENV = {"tenant": "RAG_GRAPHS_TENANT", "tags": "RAG_GRAPHS_TAGS"}
"""The environment variables that restrict a run's reads to labels (``RagContext.tenant``/``tags``)."""


def with_context_labels(options: IngestOptions, context: Any) -> IngestOptions:
    """``options`` with each access label it leaves ``Unset`` taken from ``context`` (a
    ``RagContext``), or, without one, from ``RAG_GRAPHS_TENANT``/``RAG_GRAPHS_TAGS`` read as
    ``RagContext()`` reads them; a label neither gives is none. The result has no unset label.

    The variables that restrict every search to a tenant used to be ignored by ingest: its chunks
    were stored unlabelled, out of reach of that tenant's searches, without a word. A label the
    options give (``tenant=None`` included) is the call's own and wins, as ``ask --tenant`` wins
    over the environment.

    Raises:
        pydantic.ValidationError: a variable set but naming nothing (``RAG_GRAPHS_TENANT=``), as
            ``RagContext()`` refuses it.
    """
    unset = [name for name in LABEL_ENV if isinstance(getattr(options, name), Unset)]
    if context is None and any(os.environ.get(LABEL_ENV[name]) is not None for name in unset):
        from rag_graphs.config.context import RagContext

        context = RagContext()
    found = {name: getattr(context, name, None) for name in unset}
    return replace(
        options, **{name: value or _value(getattr(options, name)) for name, value in found.items()}
    )


def _value(label: Any) -> Any:
    """A label as it reads: an unset one as its default (no tenant, no tags)."""
    return label.value if isinstance(label, Unset) else label


def check_bounds(max_file_bytes: Any, timeout: Any) -> None:
    """Refuse, naming the setting and its range, a file size limit or a timeout that is not one."""
    if isinstance(max_file_bytes, bool) or not isinstance(max_file_bytes, int) or max_file_bytes < 1:
        raise ValueError(f"ingest: max_file_bytes={max_file_bytes!r}: expected a whole number of bytes >= 1")
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ValueError(
            f"ingest: timeout={timeout!r}: expected a finite number of seconds > 0 "
            "(None: no limit, in process)"
        )


def megabytes(value: float, setting: str = "--max-file-mb") -> int:
    """``value`` megabytes as bytes, for a size given in MB (the CLI's ``--max-file-mb``).

    Raises:
        ValueError: ``value`` is not a finite number > 0 (the message names ``setting``).
    """
    if not math.isfinite(value) or value <= 0 or int(value * 1024 * 1024) < 1:
        raise ValueError(f"{setting}={value!r}: expected a finite number of megabytes > 0")
    return int(value * 1024 * 1024)


def access_labels(tenant: str | None, tags: Iterable[str]) -> dict[str, Any]:
    """The access labels to store on chunks, checked: a tenant string, a list of tag strings."""
    tags = [tags] if isinstance(tags, str) else list(tags)
    if tenant is not None and (not isinstance(tenant, str) or not tenant):
        raise ValueError(f"ingest: tenant={tenant!r}: expected a non-empty string")
    if not all(isinstance(t, str) and t for t in tags):
        raise ValueError(f"ingest: tags={tags!r}: expected non-empty strings")
    labels: dict[str, Any] = {}
    if tenant is not None:
        labels[TENANT_FIELD] = tenant
    if tags:
        labels[TAGS_FIELD] = sorted(set(tags))
    return labels
