"""Community reports: written per community, resumable, dropped with their chunks (delete, replace,
relabel) and written again only where dropped; tenants kept apart; unstructured replies kept."""

from __future__ import annotations

import hashlib
import itertools
import json

import pytest
from langchain_core.documents import Document
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from typer.testing import CliRunner

from rag_graphs.ingestion.community_reports import build_reports
from rag_graphs.llm.structured import invoke_structured
from rag_graphs.store.reports import REPORT_KIND, report_index, reports_collection
from tests.conftest import RecordingChat

ADA = ("ada", "babbage", "engine", "notes")
KORVIK = ("korvik", "lunmar", "harbour", "osterby")


def _writer() -> RecordingChat:
    """A model that answers every prompt with a well-formed report, numbered (and keeps the prompts)."""
    return RecordingChat(
        seen=[],
        messages=map(
            lambda i: AIMessage(
                content=json.dumps(
                    {
                        "title": f"Community {i}",
                        "summary": f"About {i}.",
                        "findings": [f"fact {i}"],
                        "rating": 7,
                    },
                )
            ),
            itertools.count(),
        ),
    )


def _chunk(cid: str, source: str, entities: tuple[str, ...], **labels) -> Document:
    """One chunk row; its labels are part of its file's version and id, as ingest makes them."""
    version = hashlib.sha256(json.dumps(labels, sort_keys=True).encode()).hexdigest()[:12]
    metadata = {
        "chunk_id": f"{cid}-{version}",
        "source": source,
        "doc_hash": version,
        "entities": list(entities),
    }
    return Document(page_content=f"{source}: {' and '.join(entities)} ({cid})", metadata=metadata | labels)


def _files(**labels) -> dict[str, list[Document]]:
    """Two entity clusters: Ada's over files a.md and a2.md, Korvik's in b.md."""
    return {
        "a.md": [_chunk("a1", "a.md", ADA[:3], **labels), _chunk("a2", "a.md", ADA[1:], **labels)],
        "a2.md": [_chunk("a3", "a2.md", (ADA[0], ADA[3]), **labels)],
        "b.md": [_chunk("b1", "b.md", KORVIK[:3], **labels), _chunk("b2", "b.md", KORVIK[1:], **labels)],
    }


def _build(index, model=None, **options):
    return build_reports(index, model or _writer(), ask=invoke_structured, progress=False, **options)


def _reports(index) -> dict[str, Document]:
    return {str(d.id): d for d, _ in report_index(index).iter_chunks()}


@pytest.fixture
def stored(index):
    for docs in _files().values():
        index.add(docs)
    return index


def test_two_clusters_get_two_reports_in_the_contract_schema(stored):
    report = _build(stored)
    assert (report.communities, report.written, report.kept, report.llm_calls) == (2, 2, 0, 2)
    assert report.fallbacks == 0 and "2 written" in report.summary()
    reports = list(_reports(stored).values())
    assert len(reports) == 2
    assert report_index(stored).collection == reports_collection(stored.collection) == "test_communities"
    by_entities = {tuple(d.metadata["entities"]): d for d in reports}
    ada = by_entities[tuple(sorted(ADA))]
    assert sorted(ada.metadata["chunks"]) == sorted(d.id for d in _a_chunks(stored))
    meta = ada.metadata
    assert (
        meta["kind"] == REPORT_KIND and meta["level"] == 0 and meta["parent"] == "" and meta["source"] == ""
    )
    assert meta["community"] == ada.id and meta["rating"] == 7.0 and meta["findings"][0].startswith("fact")
    assert ada.page_content == f"{meta['title']}\n\n{meta['summary']}\n\n- {meta['findings'][0]}"
    # embedded: a search over the reports finds them
    assert report_index(stored).search(meta["title"], k=1, mode="dense")


def _a_chunks(index) -> list[Document]:
    return [d for d, _ in index.iter_chunks() if d.metadata["source"] in ("a.md", "a2.md")]


def test_a_second_build_writes_nothing(stored):
    _build(stored)
    again = _build(stored)
    assert (again.written, again.kept, again.dropped, again.llm_calls) == (0, 2, 0, 0)


def test_deleting_a_file_drops_exactly_its_reports_and_a_rebuild_writes_only_those(stored):
    _build(stored)
    before = _reports(stored)
    korvik = [i for i, d in before.items() if "korvik" in d.metadata["entities"]]
    stored.delete_source("a2.md")
    after = _reports(stored)
    assert list(after) == korvik  # Ada's report read a2.md's chunk: gone before the chunk went
    rebuilt = _build(stored)
    assert (rebuilt.written, rebuilt.kept, rebuilt.llm_calls, rebuilt.dropped) == (1, 1, 1, 0)
    ada = next(d for d in _reports(stored).values() if "ada" in d.metadata["entities"])
    assert sorted(ada.metadata["chunks"]) == sorted(d.id for d in _a_chunks(stored))


def test_relabelling_a_file_drops_its_reports_and_the_rebuild_carries_the_new_labels(stored):
    _build(stored)
    relabelled = _files(tenant="acme", tags=["hr"])["b.md"]
    stored.add(relabelled)  # re-ingest: the new version first, then the old one goes
    stored.delete_stale("b.md", relabelled[0].metadata["doc_hash"])
    assert all("korvik" not in d.metadata["entities"] for d in _reports(stored).values())
    rebuilt = _build(stored)
    assert (rebuilt.written, rebuilt.kept) == (1, 1)
    korvik = next(d for d in _reports(stored).values() if "korvik" in d.metadata["entities"])
    assert korvik.metadata["tenant"] == "acme" and korvik.metadata["tags"] == ["hr"]


def test_a_build_prunes_reports_whose_community_changed_behind_its_back(stored):
    """Chunks removed without ``ChunkIndex`` (another tool): the build drops the stale report."""
    _build(stored)
    gone = [d.id for d in _a_chunks(stored) if d.metadata["source"] == "a2.md"]
    stored.client.delete(stored.collection, ids=gone)
    rebuilt = _build(stored)
    assert (rebuilt.dropped, rebuilt.written, rebuilt.kept) == (1, 1, 1)
    assert len(_reports(stored)) == 2


def test_tenants_never_share_a_report_and_reports_carry_their_labels(index):
    for tenant in ("A", "B"):
        for docs in _files(tenant=tenant).values():
            index.add(docs)
    report = _build(index)
    assert report.scopes == 2 and report.written == 4
    tenant_of = {d.id: d.metadata["tenant"] for d, _ in index.iter_chunks()}
    for rep in _reports(index).values():
        assert {tenant_of[c] for c in rep.metadata["chunks"]} == {rep.metadata["tenant"]}
        assert "tags" not in rep.metadata  # no chunk carries a tag


def test_a_reply_without_structure_is_stored_through_the_fallback(stored):
    garbage = GenericFakeChatModel(
        messages=itertools.repeat(AIMessage(content="Ada's circle\nthey met often"))
    )
    report = _build(stored, garbage)
    assert report.written == 2 and report.fallbacks == 2 and "2 from unstructured replies" in report.summary()
    for rep in _reports(stored).values():
        assert rep.metadata["title"] == "Ada's circle" and rep.metadata["rating"] == 0.0
        assert rep.metadata["summary"] == "Ada's circle\nthey met often"


def test_an_empty_collection_is_refused_by_name(index):
    with pytest.raises(ValueError, match="collection 'test' .* is empty"):
        _build(index)


def test_a_higher_level_reads_its_sub_reports_when_its_passages_do_not_fit(index):
    """Twelve components of two 4-entity cliques joined by two chunks: with at most 4 entities a
    community, each component is a level-1 community over two level-0 ones. With a budget one
    clique's passages fill, the level-1 report reads the two sub-reports, yet lists every chunk."""
    for g in range(12):
        a, b = (tuple(f"g{g}{h}{i}" for i in range(4)) for h in "ab")
        index.add(
            [_chunk(f"{g}{h}{n}", f"{g}.md", names) for h, names in (("a", a), ("b", b)) for n in range(2)]
            + [_chunk(f"{g}x", f"{g}.md", (a[0], b[0])), _chunk(f"{g}y", f"{g}.md", (a[1], b[1]))]
        )
    model = _writer()
    report = _build(index, model, max_cluster_size=4, max_chars=200)
    assert report.per_level == [24, 12] and report.written == 36
    reports = _reports(index)
    prompts = ["\n".join(str(m.content) for m in messages) for messages in model.seen]
    for top in (d for d in reports.values() if d.metadata["level"] == 1):
        subs = [d for d in reports.values() if d.metadata["parent"] == top.id]
        assert len(subs) == 2 and top.metadata["parent"] == ""
        assert {c for s in subs for c in s.metadata["chunks"]} <= set(top.metadata["chunks"])
        assert len(top.metadata["chunks"]) == 6
        # the prompt that wrote it held both sub-reports
        assert any(all(s.page_content in p for s in subs) for p in prompts)


def test_the_cli_builds_the_reports_and_prints_the_counts(stored, monkeypatch):
    import rag_graphs.llm.models as models
    import rag_graphs.search.retrieval as retrieval
    from rag_graphs.cli import ask as cli

    monkeypatch.setattr(retrieval, "index_for", lambda ctx: stored)
    monkeypatch.setattr(models, "load_chat_model", lambda spec, **kwargs: _writer())
    args = ["graph", "communities", "--store", stored.uri, "--collection", "test", "--chat-model", "fake"]
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 0, result.output
    assert "communities: 2" in result.output and "2 written" in result.output
    assert len(_reports(stored)) == 2


def test_re_ingesting_a_folder_under_another_tenant_drops_its_reports_only(tmp_path, index):
    """The relabel path end to end: Docling, spaCy entities, ingest's replace of a changed version."""
    from rag_graphs.ingestion import IngestOptions, ingest

    ada, korvik = tmp_path / "ada", tmp_path / "korvik"
    ada.mkdir()
    korvik.mkdir()
    (ada / "ada.md").write_text("# Ada Lovelace\n\nAda Lovelace worked with Charles Babbage in London.")
    (korvik / "korvik.md").write_text(
        "# Ilsa Brandt\n\nIlsa Brandt was born in Korvik and studied in Lunmar."
    )
    for folder in (ada, korvik):
        ingest(
            [folder],
            index=index,
            options=IngestOptions(entities="spacy", tenant="A", progress=False, timeout=None),
        )
    first = _build(index)
    assert first.written == 2 and {d.metadata["tenant"] for d in _reports(index).values()} == {"A"}
    ada_report = next(i for i, d in _reports(index).items() if "ada lovelace" in d.metadata["entities"])

    ingest([korvik], index=index, options=IngestOptions(tenant="B", progress=False, timeout=None))
    assert list(_reports(index)) == [ada_report]  # Brandt's report went with its tenant-A chunk
    rebuilt = _build(index)
    assert (rebuilt.written, rebuilt.kept, rebuilt.llm_calls) == (1, 1, 1)
    brandt = next(d for d in _reports(index).values() if "korvik" in d.metadata["entities"])
    assert brandt.metadata["tenant"] == "B"


def test_min_chunks_skips_small_communities_and_prunes_their_reports(stored):
    """Ada's community holds 3 chunks, Korvik's 2: with min_chunks=3 only Ada's gets a report,
    and a build with it after one without drops Korvik's."""
    _build(stored)
    report = _build(stored, min_chunks=3)
    assert (report.too_small, report.kept, report.dropped, report.written) == (1, 1, 1, 0)
    assert [d.metadata["entities"] for d in _reports(stored).values()] == [sorted(ADA)]
    assert "1 too small" in report.summary()


def test_a_title_that_echoes_the_schema_is_replaced_by_the_entities():
    from rag_graphs.entity_graph.communities import Community
    from rag_graphs.ingestion.community_reports import ReportFields, to_document

    community = Community("c1", 0, "", ("ada", "babbage", "engine", "notes"), ("x1",), None, ())
    for echo in ("ReportFields", "title", "  "):
        doc = to_document(community, ReportFields(title=echo, summary="s", rating=42))
        assert doc.metadata["title"] == "ada, babbage, engine" and doc.metadata["rating"] == 10.0
        assert "tenant" not in doc.metadata and "tags" not in doc.metadata


def test_an_interrupted_build_keeps_what_it_wrote_and_the_next_one_resumes(stored):
    calls: list[int] = []

    def dies_after_one(model, messages, schema, default):
        if calls:
            raise KeyboardInterrupt
        calls.append(1)
        return invoke_structured(model, messages, schema, default)

    with pytest.raises(KeyboardInterrupt):
        build_reports(stored, _writer(), ask=dies_after_one, progress=False)
    assert len(_reports(stored)) == 1
    resumed = _build(stored)
    assert (resumed.written, resumed.kept, resumed.llm_calls) == (1, 1, 1)
