"""What the indexing graph takes and returns: typed, documented, checked in one place.

The input is a pydantic model because its field descriptions become the JSON schema that
LangGraph Studio shows and the LangGraph server publishes as the graph's MCP tool (an MCP
client's model reads them to fill the call in). LangGraph does not validate a graph's input, so
``parse_request`` does, before anything touches the store: a bad value is one line naming the
field (``IndexRequest.texts[0].source: ...``), and nothing stored is lost.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator
from typing_extensions import TypedDict

from rag_graphs.ingestion.sources import TEXT_SCHEME, TextFormat

"""The source name of a raw text sent to the indexing graph: ``text://<its name>``."""

Label = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
"""An access label: a tenant or a tag (a non-empty string)."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class IndexRequestError(ValueError):
    """The indexing graph's input is malformed, or asks for what its caller may not do."""


def _clean(value: str, what: str) -> str:
    value = value.strip()
    if not value or _CONTROL.search(value):
        raise ValueError(f"{what}: expected a non-empty string without control characters")
    return value


class TextItem(BaseModel):
    """A raw text to store as one source (sending the same ``source`` again replaces it)."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(
        description="The text's name in the store; it is stored and cited as text://<source> "
        "(give that to delete or relabel it)."
    )
    text: str = Field(min_length=1, description="The text itself (Markdown unless format says otherwise).")
    format: TextFormat = Field(
        default="markdown", description="How to read the text: markdown, text or html."
    )

    @field_validator("source")
    @classmethod
    def _source(cls, value: str) -> str:
        return _clean(value.removeprefix(TEXT_SCHEME), "a text's source name")

    @property
    def key(self) -> str:
        """The source the store keys this text's chunks by."""
        return TEXT_SCHEME + self.source


class RelabelItem(BaseModel):
    """New access labels for a stored source: its chunks are stored again with these labels only."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="A stored source: a file path, a URL, a text://name, or a folder.")
    tenant: Label | None = Field(
        default=None, description="The tenant to store it under (on a served deployment: yours)."
    )
    tags: list[Label] = Field(
        default_factory=list, description="The tags to store it with (replacing its tags)."
    )


class IndexRequest(BaseModel):
    """Change what the store holds: add files, URLs or texts; delete sources; relabel sources.

    Deletes run first, then relabels, then additions. Every target and label is checked before
    anything is written. On a served deployment what is written carries the caller's tenant,
    and only sources the caller can read may be deleted or relabelled.
    """

    model_config = ConfigDict(extra="forbid")

    files: list[str] = Field(
        default_factory=list,
        description="Files or folders on the server to ingest (a served deployment reads them "
        "only under RAG_GRAPHS_INDEX_FILES).",
    )
    urls: list[str] = Field(default_factory=list, description="http(s) URLs to fetch and ingest.")
    texts: list[TextItem] = Field(default_factory=list, description="Raw texts to ingest, each named.")
    tenant: Label | None = Field(
        default=None, description="Tenant label for what is added (on a served deployment: yours)."
    )
    tags: list[Label] = Field(default_factory=list, description="Tag labels for what is added.")
    delete: list[str] = Field(
        default_factory=list,
        description="Stored sources to remove: a file path, a URL, a text://name, or a folder "
        "(every source under it).",
    )
    relabel: list[RelabelItem] = Field(
        default_factory=list, description="Stored sources to give new access labels."
    )
    force: bool = Field(default=False, description="Convert files again even when unchanged since stored.")

    @field_validator("files", "urls", "delete")
    @classmethod
    def _names(cls, values: list[str]) -> list[str]:
        return [_clean(v, "a name") for v in values]

    @field_validator("urls")
    @classmethod
    def _urls(cls, values: list[str]) -> list[str]:
        for url in values:
            if not url.lower().startswith(("http://", "https://")):
                raise ValueError(f"{url!r}: expected an http:// or https:// URL")
        return values

    @property
    def empty(self) -> bool:
        return not (self.files or self.urls or self.texts or self.delete or self.relabel)


class Deleted(TypedDict):
    """One delete target: the sources it matched and how many chunks went."""

    target: str
    sources: list[str]
    chunks: int


class Relabelled(TypedDict):
    """One relabelled source: its chunks stored again under ``tenant`` and ``tags``."""

    source: str
    chunks: int
    tenant: str | None
    tags: list[str]


class FileReport(TypedDict):
    """What happened to one added file, URL or text (``rag_graphs.ingestion.report.FileResult``)."""

    path: str
    chunks: int
    added: int
    removed_stale: int
    kinds: dict[str, int]
    merged: int
    error: str | None
    unchanged: bool


class AddReport(TypedDict):
    """The ingest report of the additions, as JSON-able data (``IngestReport``)."""

    files: list[FileReport]
    chunks: int
    added: int
    failed: int
    skipped: list[str]
    graph: str
    seconds: float


class IndexOutput(TypedDict, total=False):
    """What the indexing graph returns."""

    deleted: list[Deleted]
    relabelled: list[Relabelled]
    added: AddReport
    total_chunks_in_store: int
    summary: str


class IndexState(IndexOutput, total=False):
    """The graph's state: the raw input and the outputs. Nothing checked is kept in it: every node
    checks the input again against its caller's access (``rag_graphs.serve.indexing``)."""

    files: list[str]
    urls: list[str]
    texts: list[dict[str, Any]]
    tenant: str | None
    tags: list[str]
    delete: list[str]
    relabel: list[dict[str, Any]]
    force: bool


INPUT_FIELDS = tuple(IndexRequest.model_fields)


def parse_request(state: dict[str, Any]) -> IndexRequest:
    """The checked request in ``state``'s input fields.

    Raises:
        IndexRequestError: a field is missing its type or value; one line naming the field.
    """
    given = {k: v for k, v in state.items() if k in INPUT_FIELDS and v is not None}
    try:
        request = IndexRequest.model_validate(given)
    except ValidationError as exc:
        raise IndexRequestError(_one_line(exc)) from None
    if request.empty:
        raise IndexRequestError(
            "IndexRequest: nothing to do: give files, urls or texts to add, delete or relabel"
        )
    return request


def _one_line(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False):
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
        message = str(error["ctx"]["error"]) if error["type"] == "value_error" else error["msg"]
        parts.append(f"IndexRequest{where}: {message}")
    return "; ".join(parts)
