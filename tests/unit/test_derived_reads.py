"""Derived rows under the access rule and after deletes (issue 50, items 3 and 4): GraphRAG's local
search names only the linked entities the run may read of, and a community report whose build
raced a delete is neither kept nor shown."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from rag_graphs.ingestion.community_reports import build_reports
from rag_graphs.llm.structured import invoke_structured
from rag_graphs.search.derived import nameable
from rag_graphs.store.reports import add_reports, report_id, report_index, report_text
from tests.graph_seams import use_extractor
from tests.unit.test_graphrag import COMMUNITIES, run, store_corpus, vocab

PAYROLL = "Who paid Ilsa Brandt in Zurich?"
"""Links to ``ilsa brandt`` (acme's h2 and globex's s1) and ``zurich`` (globex's s1 only)."""


def _texts(out: dict) -> str:
    return "\n".join(str(s.get("text", "")) for s in out["steps"])


def test_local_search_steps_name_no_entity_of_another_tenant(index, make_context, monkeypatch):
    store_corpus(index)
    use_extractor(monkeypatch, vocab)
    out, model, _ = run(make_context, PAYROLL, graphrag_search="local", tenant="acme")
    steps = _texts(out)
    assert "linked entities ilsa brandt)" in steps  # acme's own entity is named, and no other
    assert "zurich" not in steps.lower() and "SECRET-7731" not in model.prompts()
    out, _, _ = run(make_context, PAYROLL, graphrag_search="local", tenant="globex")  # control
    assert "linked entities ilsa brandt, zurich)" in _texts(out)


def test_an_entity_is_nameable_when_one_readable_chunk_names_it(index, make_context):
    """Postings of another tenant only: not nameable, unless the row's postings were cut (a hub)
    and a readable chunk names it (looked up on the chunk rows under the filter)."""
    store_corpus(index)
    ctx = make_context(tenant="acme")
    seeds = {
        "zurich": {"chunks": ["s1"], "n": 1},
        "ilsa brandt": {"chunks": ["s1"], "n": 1001},  # h2 (acme) names it; its posting was cut
        "korvik": {"chunks": ["s1", "h1"], "n": 2},
        "lunmar": {"chunks": ["s1"], "n": 1},  # m1 names it, but the row says s1 alone: not cut
    }
    assert nameable(ctx, seeds) == ["ilsa brandt", "korvik"]
    assert nameable(make_context(), seeds) == list(seeds)  # no filter: every linked entity


class DeletingWriter(GenericFakeChatModel):
    """Writes a report for every prompt; the prompt holding ``trigger`` first deletes ``source``
    from ``index``: the delete lands while that report is being written."""

    index: Any = None
    source: str = ""
    trigger: str = ""
    seen: list = []

    def _generate(self, messages, *args, **kwargs):
        text = "\n".join(str(m.content) for m in messages)
        self.seen.append(text)
        if self.trigger and self.trigger in text:
            assert self.index.delete_source(self.source) > 0
            self.trigger = ""
        return super()._generate(messages, *args, **kwargs)


def _replies() -> Iterator[AIMessage]:
    return iter(
        AIMessage(content=json.dumps({"title": f"Report {i}", "summary": "About it.", "rating": 5}))
        for i in range(100)
    )


def _chunk(cid: str, source: str, text: str, entities: list[str]) -> Document:
    return Document(
        page_content=text,
        metadata={"chunk_id": cid, "source": source, "doc_hash": "v1", "entities": entities},
    )


def test_a_report_written_while_its_file_is_deleted_is_not_kept(index):
    index.add(
        [
            _chunk("a1", "a.md", "Ada and Babbage built the engine.", ["ada", "babbage", "engine"]),
            _chunk("a2", "a.md", "Babbage kept the engine notes.", ["babbage", "engine", "notes"]),
            _chunk("k1", "k.md", "DELETED-CANARY: Korvik pays Lunmar.", ["korvik", "lunmar", "harbour"]),
            _chunk("k2", "k.md", "Lunmar sails from the Korvik harbour.", ["lunmar", "harbour", "osterby"]),
        ]
    )
    model = DeletingWriter(messages=_replies(), index=index, source="k.md", trigger="DELETED-CANARY", seen=[])
    built = build_reports(index, model, ask=invoke_structured, progress=False)
    assert any("DELETED-CANARY" in p for p in model.seen)  # the model was writing it when the file went
    stored = [d for d, _ in report_index(index).iter_chunks()]
    assert stored and all(set(d.metadata["chunks"]) <= {"a1", "a2"} for d in stored)
    assert built.raced == 1 and "1 not kept (a chunk deleted meanwhile)" in built.summary()
    again = build_reports(index, model, ask=invoke_structured, progress=False)
    assert (again.written, again.dropped) == (0, 0)  # nothing left over to prune


def test_an_unrestricted_global_run_shows_no_report_over_a_deleted_chunk(index, make_context):
    """A report over a chunk that is gone (a build on another process that raced the delete) is not
    sent to the model even by a run with no filter; the others are."""
    store_corpus(index)
    title, chunks = COMMUNITIES["mountain"]
    orphan = Document(
        id=report_id(0, ["gone-1", *chunks]),
        page_content=report_text("Orphan ORPHAN-CANARY", "Written from a deleted file.", []),
        metadata={"kind": "community_report", "level": 0, "parent": "", "community": "orphan"}
        | {"title": "Orphan", "summary": "", "rating": 9.0, "findings": [], "entities": ["lunmar"]}
        | {"chunks": ["gone-1", *chunks], "source": "", "tags": []},
    )
    add_reports(index, [orphan])
    out, model, _ = run(
        make_context, "What are the main themes of these documents?", graphrag_search="global"
    )
    assert "ORPHAN-CANARY" not in model.prompts()
    assert "The Korvik harbour" in model.prompts() and title in model.prompts()  # the others are read
