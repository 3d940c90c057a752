"""What a caller of the indexing graph may write, delete and relabel.

A served run's context is already narrowed to the caller (``rag_graphs.config.runtime``): its
tenant, tags, sources and filter are what the caller may read. Writes follow the same access:
what the caller adds or relabels carries the caller's tenant (another one is refused, never
silently replaced) and tags among the caller's; a source may be deleted or relabelled only when
every one of its chunks is readable by the caller, and a source the caller cannot read at all is
reported exactly as one that does not exist (its name is not confirmed to another tenant).
A caller with no access fields (a Python caller, a deployment without tenants) may do anything.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_graphs.config.specs import all_of
from rag_graphs.search.sources import matching_sources, source_key
from rag_graphs.serve.requests import IndexRequestError
from rag_graphs.store.filters import quote, search_expr, starts_with

if TYPE_CHECKING:
    from rag_graphs.config.context import RagContext
    from rag_graphs.store import ChunkIndex


def write_labels(ctx: RagContext, tenant: str | None, tags: Sequence[str], where: str) -> dict[str, Any]:
    """The labels to store (``tenant``, ``tags``) for a caller with ``ctx``'s access.

    Raises:
        IndexRequestError: ``tenant`` is not the caller's, or a tag is outside the caller's tags
            (``where`` names the request field holding them, e.g. ``IndexRequest.relabel[0]``).
    """
    if ctx.tenant is not None and tenant not in (None, ctx.tenant):
        raise IndexRequestError(f"{where}.tenant={tenant!r}: you may write only to tenant {ctx.tenant!r}")
    outside = sorted(set(tags) - set(ctx.tags)) if ctx.tags else []
    if outside:
        raise IndexRequestError(
            f"{where}.tags={list(tags)!r}: you may write only tags {list(ctx.tags)!r} ({outside} are not)"
        )
    return {"tenant": ctx.tenant if ctx.tenant is not None else tenant, "tags": sorted(set(tags or ctx.tags))}


def caller_sources(
    index: ChunkIndex, ctx: RagContext, targets: Sequence[str], field: str
) -> dict[str, list[str]]:
    """Each target (a source, or a folder / URL prefix) -> the stored sources it names that the
    caller may change: all of their chunks are readable under the caller's access.

    Every target is matched before the caller changes anything, so one bad target leaves the
    store untouched.

    Raises:
        IndexRequestError: a target names no source the caller can read, or a source the caller
            can read only in part (it holds chunks outside the caller's access).
    """
    if not targets:
        return {}
    expr = search_expr(ctx)
    readable = _sources(index, expr)
    found: dict[str, list[str]] = {}
    unknown = []
    for target in targets:
        matched = matching_sources(readable, _typed(target))
        if matched:
            found[target] = matched
        else:
            unknown.append(target)
    if unknown:
        raise IndexRequestError(
            f"IndexRequest.{field}: {', '.join(map(repr, unknown))}: not a stored source you can read"
        )
    if expr is not None:
        for target, sources in found.items():
            partial = [s for s in sources if index.chunks.count(f"source == {quote(s)}") != readable[s]]
            if partial:
                raise IndexRequestError(
                    f"IndexRequest.{field}: {target!r}: {partial[0]!r} holds chunks outside your access"
                )
    return found


def check_writable(index: ChunkIndex, ctx: RagContext, targets: Sequence[tuple[str, str]]) -> None:
    """Refuse to add a source (``(field, source)``: a file or folder path, a URL, a text's
    ``text://`` name) that is stored already with chunks the caller cannot read: the new version
    would replace them (sources are one namespace), deleting another tenant's text or file.

    Raises:
        IndexRequestError: naming the field; the source's name is all it tells.
    """
    expr = search_expr(ctx)
    if expr is None or not targets or not index.chunks.exists():
        return
    for field, target in targets:
        key = source_key(_typed(target))
        named = f"(source == {quote(key)}) or ({starts_with('source', key.rstrip('/') + '/')})"  # literal
        if index.chunks.count(named) != index.chunks.count(all_of(named, expr) or named):
            raise IndexRequestError(
                f"{field}: {target!r} is stored already under access you cannot read: "
                "give it another name (or ask whoever stored it)"
            )


def _typed(target: str) -> str | Path:
    """A target as the user typed it: a URL or text:// name as is, else a path on the server."""
    return target if "://" in target else Path(target)


def _sources(index: ChunkIndex, expr: str | None) -> dict[str, int]:
    """Stored sources with their chunk counts under ``expr`` (all when None)."""
    return dict(Counter(str(row.get("source")) for row in index.chunks.scan(["source"], where=expr)))
