"""GraphRAG community reports (Edge et al. 2024): one report per community of the entity graph,
written by the chat model, embedded and stored in ``<collection>_communities``
(``rag_graphs.store.reports`` holds the row schema; ``rag_graphs.entity_graph.communities`` the
communities and why they never mix access scopes).

Each report reads its community's text within ``max_chars``: a level-0 community its chunks, those
naming most of its entities first; a higher level its chunks when they all fit, else its
sub-communities' reports (built first: levels go bottom-up), best rated first. Either way the row
lists every chunk underneath, so the access rule (a run sees a report only when its filter admits
all those chunks) and the delete rule hold at every level. The model answers in a structure
(title, summary, findings, rating) through ``rag_graphs.llm.structured.invoke_structured``, as the
nodes' structured calls do (a test may pass another ``ask``), which never raises on a bad reply;
calls and tokens are counted on the build's report (``ModelUsage``). A reply no structure can be
read from is stored all the same: its first line as the title, the text as the summary, rating 0
(``CommunityBuildReport.fallbacks`` counts them).

``plan_reports`` reads what a build will do before any model call (the communities, the reports
to write: ``ReportPlan.calls`` LLM calls), so a caller can show the cost or refuse it
(``rag-graphs eval``'s ``--max-report-calls``) and hand the plan to ``build_reports``.

A build is resumable and follows its chunks, as the RAPTOR tree does: a report's id hashes its
level and member chunks (``report_id``), and a report already stored is not written again; reports
of communities that no longer exist (a chunk gone, relabelled or added) or whose labels differ from
their scope's are pruned first. Deleting chunks already dropped the reports over them
(``rag_graphs.store.derived``), so after a delete the next build writes only those: LLM calls grow
with the communities touched. Adding documents can move Leiden's partition; communities whose
members did not change keep their reports.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import BaseModel, Field

from rag_graphs.entity_graph.communities import (
    MAX_CLUSTER_SIZE,
    SEED,
    ChunkEntities,
    Community,
    Partition,
    detect,
    read_chunk_entities,
)
from rag_graphs.llm.structured import invoke_structured
from rag_graphs.llm.usage import ModelUsage
from rag_graphs.prompts import load_prompt
from rag_graphs.prompts.fencing import fence
from rag_graphs.store.fields import TAGS_FIELD, TENANT_FIELD
from rag_graphs.store.index import ChunkIndex
from rag_graphs.store.reports import REPORT_KIND, add_reports, report_index, report_text
from rag_graphs.support.progress import progress_bar

MAX_REPORT_CHARS = 6000
"""Text one report reads (RAPTOR's summariser budget): passages or sub-reports."""
MAX_FINDINGS = 8
TITLE_CHARS = 120
_GET_BATCH = 64
WRITE_BATCH = 8
"""Reports embedded and stored together (one cache invalidation per batch, not per report)."""


class ReportFields(BaseModel):
    """What the model writes for one community."""

    title: str = Field(description="a few words naming the community's main entities")
    summary: str = Field(description="one paragraph: what the community is about, how its entities relate")
    findings: list[str] = Field(default_factory=list, description="up to five key facts, one sentence each")
    rating: float = Field(default=0.0, description="importance from 0 to 10")


_UNREAD = ReportFields(title="", summary="", findings=[], rating=0.0)
_ECHOES = {"", ReportFields.__name__.lower(), *ReportFields.model_fields}
"""Titles that only echo the schema (SmolLM2-135M writes "ReportFields")."""


class Ask(Protocol):
    """A structured call that never raises on a bad reply (``invoke_structured``): its result has
    ``value``, ``method`` ("default" when nothing was read), ``raw`` and ``calls``."""

    def __call__(
        self, model: BaseChatModel, messages: list[BaseMessage], schema: Any, default: Any
    ) -> Any: ...


@dataclass
class CommunityBuildReport(ModelUsage):
    """What one build did (and its model calls: ``ModelUsage``)."""

    chunks: int = 0
    scopes: int = 0
    communities: int = 0
    per_level: list[int] = field(default_factory=list)
    uncovered: int = 0
    too_big: int = 0
    too_small: int = 0
    """Communities left without a report: fewer than ``min_chunks`` chunks."""
    written: int = 0
    kept: int = 0
    dropped: int = 0
    """Stored reports pruned before building: their community is gone or its labels changed."""
    fallbacks: int = 0
    """Reports stored from the raw reply: the model gave no readable structure."""
    raced: int = 0
    """Reports not kept: a chunk they were written from was deleted while the build ran."""
    leiden_seconds: float = 0.0
    seconds: float = 0.0

    def summary(self) -> str:
        levels = ", ".join(f"level {i}: {n}" for i, n in enumerate(self.per_level)) or "none"
        return (
            f"communities: {self.communities} in {self.scopes} scope(s) ({levels}) from {self.chunks} chunks "
            f"({self.uncovered} in no community; no report for {self.too_big} too big, "
            f"{self.too_small} too small); reports: "
            f"{self.written} written ({self.fallbacks} from unstructured replies), {self.kept} kept, "
            f"{self.dropped} stale dropped, {self.raced} not kept (a chunk deleted meanwhile); "
            f"{self.spent()}; "
            f"Leiden {self.leiden_seconds:.1f}s, total {self.seconds:.1f}s"
        )


@dataclass
class ReportPlan:
    """What a build will do, read before any model call (``plan_reports``): the communities, the
    stored reports it keeps or prunes, and those it writes (``calls``: one model call each)."""

    chunks: list[ChunkEntities]
    partition: Partition
    wanted: list[Community]
    kept: dict[str, Document]
    stale: list[str]
    leiden_seconds: float

    @property
    def calls(self) -> int:
        """Reports to write, one structured model call each (a fallback reply costs no more)."""
        return sum(c.id not in self.kept for c in self.wanted)


def plan_reports(
    index: ChunkIndex, *, seed: int = SEED, max_cluster_size: int = MAX_CLUSTER_SIZE, min_chunks: int = 1
) -> ReportPlan:
    """Read what ``build_reports`` would do, writing nothing: communities by hierarchical Leiden,
    the stored reports still current, the reports to write. A caller shows ``calls`` (or refuses
    a build that would cost too many) before handing the plan to ``build_reports``.

    Raises:
        ValueError: the collection is empty.
    """
    start = time.perf_counter()
    chunks = read_chunk_entities(index)
    if not chunks:
        raise ValueError(f"collection {index.collection!r} at {index.uri} is empty: ingest documents first")
    partition = detect(chunks, seed=seed, max_cluster_size=max_cluster_size)
    wanted = [c for c in partition.communities if len(c.chunks) >= min_chunks]
    kept, stale = _current(report_index(index), {c.id: c for c in wanted})
    return ReportPlan(chunks, partition, wanted, kept, stale, time.perf_counter() - start)


def build_reports(
    index: ChunkIndex,
    model: BaseChatModel,
    *,
    ask: Ask = invoke_structured,
    seed: int = SEED,
    max_cluster_size: int = MAX_CLUSTER_SIZE,
    min_chunks: int = 1,
    max_chars: int = MAX_REPORT_CHARS,
    progress: bool = True,
    plan: ReportPlan | None = None,
) -> CommunityBuildReport:
    """Build (or finish building) the community reports of ``index`` into ``<collection>_communities``.

    ``min_chunks`` > 1 writes no report on communities of fewer chunks: most communities of a
    corpus of unrelated passages hold one (two thirds on HotpotQA's, BENCHMARKS.md "Community
    reports"), so 2 cuts the calls by about that much. A parent still lists such chunks (and reads
    them when its passages fit), but a lone passage whose community has no parent is in no report.
    ``plan``: what ``plan_reports`` read (with the same options), so it is not read twice.

    Raises:
        ValueError: the collection is empty.
    """
    start = time.perf_counter()
    plan = plan or plan_reports(index, seed=seed, max_cluster_size=max_cluster_size, min_chunks=min_chunks)
    partition, wanted = plan.partition, plan.wanted
    report = CommunityBuildReport(
        chunks=len(plan.chunks),
        scopes=partition.scopes,
        communities=len(partition.communities),
        per_level=partition.levels(),
        uncovered=partition.uncovered,
        too_big=partition.too_big,
        too_small=len(partition.communities) - len(wanted),
        leiden_seconds=plan.leiden_seconds,
    )
    reports = report_index(index)
    report.dropped = reports.delete_ids(plan.stale) if plan.stale else 0
    stored = plan.kept
    entities_of = {c.id: c.entities for c in plan.chunks}
    texts: dict[str, Document] = dict(stored)
    todo = [c for c in wanted if c.id not in stored]
    report.kept = len(wanted) - len(todo)
    pending: list[Document] = []
    try:
        for community in progress_bar(todo, desc="community reports", unit="report", disable=not progress):
            material = _material(index, community, entities_of, texts, max_chars)
            messages = load_prompt("community_report").format_messages(
                entities=fence(", ".join(community.entities)), material="\n".join(fence(m) for m in material)
            )
            result = ask(model, messages, ReportFields, _UNREAD)
            report.count(list(result.calls))
            fields = result.value if result.method != "default" else _fallback(result.raw, community)
            report.fallbacks += result.method == "default"
            texts[community.id] = document = to_document(community, fields)
            pending.append(document)
            if len(pending) >= WRITE_BATCH:
                _store(index, pending, report, texts)
                pending = []
    finally:  # what was written before an interruption is kept: the next build resumes after it
        _store(index, pending, report, texts)
        if todo:
            reports.flush()
    report.seconds = plan.leiden_seconds + time.perf_counter() - start
    return report


def _store(
    index: ChunkIndex, pending: list[Document], report: CommunityBuildReport, texts: dict[str, Document]
) -> None:
    """Store the ``pending`` reports whose chunks are all still stored, then drop those a delete
    overtook during the write.

    A delete drops the reports over its chunks before the chunks go (``store.derived``), and again
    after; a report the model was still writing then was not stored yet, so its build checks
    before writing (a chunk gone: its text is not stored) and after (a delete that landed during
    the write). Between the two checks and the delete's two sweeps, no order of the steps leaves a
    report over a deleted chunk; a reader also shows none (``search.derived``)."""
    raced = _overtaken(index, pending)
    kept = [d for d in pending if str(d.id) not in raced]
    add_reports(index, kept)
    late = _overtaken(index, kept)
    if late:
        report_index(index).delete_ids(sorted(late))
    for doc_id in raced | late:  # a parent is not built from it either (it lists the same chunk)
        texts.pop(doc_id, None)
    report.written += len(pending) - len(raced | late)
    report.raced += len(raced | late)


def _overtaken(index: ChunkIndex, reports: list[Document]) -> set[str]:
    """Ids of the ``reports`` that list a chunk no longer stored."""
    wanted = {str(d.id): [str(c) for c in d.metadata.get("chunks") or []] for d in reports}
    stored = index.existing_ids(list(dict.fromkeys(c for ids in wanted.values() for c in ids)))
    return {doc_id for doc_id, ids in wanted.items() if not set(ids) <= stored}


def to_document(community: Community, fields: ReportFields) -> Document:
    """The stored row of ``community``'s report (``rag_graphs.store.reports`` describes it)."""
    title = " ".join(fields.title.split())[:TITLE_CHARS]
    if title.lower() in _ECHOES:  # a small model echoing the schema is no title: name the entities
        title = ", ".join(community.entities[:3])
    findings = [f.strip() for f in fields.findings if f and f.strip()][:MAX_FINDINGS]
    summary = fields.summary.strip()
    metadata: dict[str, Any] = {
        "kind": REPORT_KIND,
        "level": community.level,
        "parent": community.parent,
        "community": community.id,
        "title": title,
        "summary": summary,
        "rating": min(10.0, max(0.0, float(fields.rating))),
        "findings": findings,
        "entities": list(community.entities),
        "chunks": list(community.chunks),
        "source": "",
        "page": -1,
        "crefs": [],
    }
    if community.tenant is not None:  # as on the chunk rows: a label only when it is set
        metadata[TENANT_FIELD] = community.tenant
    if community.tags:
        metadata[TAGS_FIELD] = list(community.tags)
    return Document(id=community.id, page_content=report_text(title, summary, findings), metadata=metadata)


def _fallback(raw: AIMessage | None, community: Community) -> ReportFields:
    """A report from a reply no structure could be read from: first line as title, text as summary."""
    text = str(raw.content).strip() if raw is not None and isinstance(raw.content, str) else ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    title = lines[0] if lines else ", ".join(community.entities[:3])
    return ReportFields(title=title, summary=text or ", ".join(community.entities), findings=[], rating=0.0)


def _material(
    index: ChunkIndex,
    community: Community,
    entities_of: dict[str, tuple[str, ...]],
    reports: dict[str, Document],
    max_chars: int,
) -> list[str]:
    """The texts one report reads, within ``max_chars``: the community's chunks (those naming most
    of its entities first), or, for a community with sub-communities whose chunks do not all fit,
    the sub-communities' reports, best rated first."""
    members = set(community.entities)
    ranked = sorted(
        community.chunks, key=lambda cid: (-len(members.intersection(entities_of.get(cid, ()))), cid)
    )
    passages, fits = _fill(index, ranked, max_chars)
    subs = [reports[c] for c in community.children if c in reports]
    if fits or not subs:
        return passages
    subs.sort(key=lambda d: (-float(d.metadata.get("rating") or 0), str(d.id)))
    return _cut([d.page_content for d in subs], max_chars)


def _fill(index: ChunkIndex, ids: list[str], max_chars: int) -> tuple[list[str], bool]:
    """The texts of ``ids`` in order until ``max_chars`` (a first text longer than that is cut), and
    whether all of them fitted."""
    texts: list[str] = []
    used = 0
    for i in range(0, len(ids), _GET_BATCH):
        for doc in index.get(ids[i : i + _GET_BATCH]):
            if used + len(doc.page_content) > max_chars:
                if not texts:
                    texts.append(doc.page_content[:max_chars])
                return texts, False
            texts.append(doc.page_content)
            used += len(doc.page_content)
    return texts, True


def _cut(texts: list[str], max_chars: int) -> list[str]:
    """``texts`` in order within ``max_chars``; the one that crosses the budget is cut to it."""
    out, used = [], 0
    for text in texts:
        if used >= max_chars:
            break
        out.append(text[: max_chars - used])
        used += len(out[-1])
    return out


def _current(reports: ChunkIndex, expected: dict[str, Community]) -> tuple[dict[str, Document], list[str]]:
    """The stored reports of communities that still exist with their community's labels, by id,
    and the ids of the others (stale: their community is gone or its labels changed)."""
    kept: dict[str, Document] = {}
    stale: list[str] = []
    for doc, _ in reports.iter_chunks():
        community = expected.get(str(doc.id))
        if (
            community is None
            or doc.metadata.get(TENANT_FIELD) != community.tenant
            or tuple(doc.metadata.get(TAGS_FIELD) or ()) != community.tags
        ):
            stale.append(str(doc.id))
        else:
            kept[str(doc.id)] = doc
    return kept, stale
