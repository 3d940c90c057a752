"""GraphRAG: global search (map-reduce over community reports), local search (entities' reports
and passages), the auto choice, the access rule on reports, and the output contract."""

from __future__ import annotations

import json

import pytest
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from rag_graphs.entity_graph.build import add_entities
from rag_graphs.entity_graph.entities import annotate, normalize
from rag_graphs.methods import get_graph
from rag_graphs.methods.graphrag import interleave, route_search, within
from rag_graphs.nodes.failures import RunFailed
from rag_graphs.store import ChunkIndex
from rag_graphs.store.reports import REPORT_KIND, add_reports, report_id, report_text
from tests.contract import check_contract
from tests.graph_seams import use_extractor
from tests.unit.test_faults import FAST

VOCAB = ["Korvik", "Osric Vale", "Ilsa Brandt", "Lunmar", "Arden Moss", "Tarn Guild", "Zurich", "Velm"]
PASSAGES = {  # chunk id: (tenant, kind, text)
    "h1": ("acme", "text", "Korvik is a harbour town of fishers; its mayor is Osric Vale."),
    "h2": ("acme", "text", "Ilsa Brandt painted the harbour of Korvik at dawn."),
    "m1": ("acme", "text", "Lunmar is a mountain village ruled by the Tarn Guild."),
    "m2": ("acme", "text", "Arden Moss climbed above Lunmar every winter."),
    "s1": ("globex", "text", "SECRET-7731: Zurich payroll for Ilsa Brandt."),
    "t1": ("acme", "table", "| town | tax |\n| Velm | TABLE-CANARY |"),
}
COMMUNITIES = {  # community: (title, chunk ids)
    "harbour": ("The Korvik harbour", ["h1", "h2"]),
    "mountain": ("The Lunmar mountains", ["m1", "m2"]),
    "secret": ("Payroll in Zurich SECRET-7731", ["s1"]),
    "tax": ("Taxes of Velm TABLE-CANARY", ["t1"]),
}
GLOBAL = "What are the main themes of these documents?"
READABLE_GLOBAL = {"graphrag_search": "global", "tenant": "acme", "search_filter": 'kind != "table"'}
"""Global search over the two readable communities (not globex's, not the table's)."""


def vocab(texts: list[str]) -> list[list[str]]:
    return [[name for name in VOCAB if name in text] for text in texts]


def store_corpus(index: ChunkIndex) -> None:
    """The chunks with their entity graph, and one community report per community."""
    docs = [
        Document(
            page_content=text,
            metadata={
                "chunk_id": cid,
                "source": f"corpus/{cid}.md",
                "kind": kind,
                "tenant": tenant,
                "tags": [],
            },
        )
        for cid, (tenant, kind, text) in PASSAGES.items()
    ]
    names = annotate(docs, vocab)
    index.add(docs)
    add_entities(index, docs, names)
    index.flush()
    reports = []
    for community, (title, chunks) in COMMUNITIES.items():
        texts = [PASSAGES[c][2] for c in chunks]
        tenants = {PASSAGES[c][0] for c in chunks}
        summary = f"{title}: " + " ".join(texts)
        reports.append(
            Document(
                id=report_id(0, chunks),
                page_content=report_text(title, summary, [f"finding about {title}"]),
                metadata={
                    "kind": REPORT_KIND,
                    "level": 0,
                    "parent": "",
                    "community": community,
                    "title": title,
                    "summary": summary,
                    "rating": 5.0,
                    "findings": [f"finding about {title}"],
                    "entities": sorted({normalize(n) for t in texts for n in vocab([t])[0]}),
                    "chunks": chunks,
                    "tenant": tenants.pop() if len(tenants) == 1 else "",
                    "tags": [],
                    "source": "",
                },
            )
        )
    add_reports(index, reports)


class ByPrompt(BaseChatModel):
    """Map calls get key points naming their report's place; answer calls cite [1] and [2].
    Keeps every prompt (``seen``); a map reply for a prompt holding ``garbled`` is not JSON."""

    seen: list = []
    garbled: str = "\x00never"

    @property
    def _llm_type(self) -> str:
        return "by-prompt"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        text = "\n".join(str(m.content) for m in messages)
        self.seen.append(text)
        if "Key points, as JSON" in text:
            if self.garbled in text:
                reply = "I think the reports are about places, no JSON here"
            else:
                places = [p for p in ("Korvik", "Lunmar", "Zurich", "Velm") if p in text]
                points = [
                    {"description": f"A theme: {p}", "score": 90 - 10 * i, "reports": [i + 1]}
                    for i, p in enumerate(places)
                ]
                reply = json.dumps({"points": points})
        else:
            reply = "The documents describe two places [1] [2]."
        usage = {"input_tokens": len(text) // 4 + 1, "output_tokens": 8, "total_tokens": len(text) // 4 + 9}
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(content=reply, usage_metadata=usage))]
        )

    def prompts(self) -> str:
        return "\n".join(self.seen)


@pytest.fixture
def corpus(index):
    store_corpus(index)
    return index


def run(make_context, question: str = GLOBAL, **overrides):
    model = ByPrompt(seen=[], **({"garbled": overrides.pop("garbled")} if "garbled" in overrides else {}))
    ctx = make_context(chat_model=model, **overrides)
    return get_graph("graphrag", retry_policy=FAST).invoke({"question": question}, context=ctx), model, ctx


def test_a_global_question_cites_passages_of_both_communities(corpus, make_context):
    out, model, ctx = run(
        make_context,
        **READABLE_GLOBAL,
        graphrag_batch=1,
    )
    check_contract(out, method="graphrag", ctx=ctx)
    cited = {c["chunk_id"] for c in out["citations"]}
    assert cited & {"h1", "h2"} and cited & {"m1", "m2"}, cited
    maps = [p for p in model.seen if "Key points, as JSON" in p]
    assert len(maps) == 2  # one map call per readable report (batch of 1)
    answer_prompt = model.seen[-1]
    assert "A theme: Korvik" in answer_prompt and "A theme: Lunmar" in answer_prompt  # the reduce's points
    assert out["outcome"] == "answered"


def test_one_batch_maps_several_reports_and_the_points_keep_their_report(corpus, make_context):
    out, model, ctx = run(
        make_context, graphrag_search="global", tenant="acme", search_filter='kind != "table"'
    )
    assert len([p for p in model.seen if "Key points, as JSON" in p]) == 1
    docs = {str(d.id) for d in out["documents"]}
    assert docs == {"h1", "h2", "m1", "m2"}
    first = [str(d.id) for d in out["documents"]][:2]
    assert {first[0][0], first[1][0]} == {"h", "m"}  # one passage of each report before any second


def test_local_search_puts_the_linked_entitys_report_and_passages_in_the_context(
    corpus, make_context, monkeypatch
):
    use_extractor(monkeypatch, vocab)
    out, model, ctx = run(make_context, "Who is the mayor of Korvik?", graphrag_search="local", tenant="acme")
    check_contract(out, method="graphrag", ctx=ctx)
    answer_prompt = model.seen[-1]
    assert "The Korvik harbour" in answer_prompt  # the community report of the linked entity
    assert "The Lunmar mountains" not in answer_prompt
    assert "mayor is Osric Vale" in answer_prompt  # its passage
    assert not [p for p in model.seen if "Key points, as JSON" in p]  # no map step


@pytest.mark.parametrize("search", ["global", "local", "auto"])
def test_another_tenants_report_never_reaches_a_prompt(corpus, make_context, monkeypatch, search):
    use_extractor(monkeypatch, vocab)
    for question in (GLOBAL, "Who paid Ilsa Brandt in Zurich?"):
        out, model, _ = run(make_context, question, graphrag_search=search, tenant="acme")
        assert "SECRET-7731" not in model.prompts()
        assert all(PASSAGES[str(d.id)][0] == "acme" for d in out["documents"])
    _, model, _ = run(make_context, GLOBAL, graphrag_search="global")  # control: unrestricted, it is read
    assert "SECRET-7731" in model.prompts()


def test_auto_routes_through_graphrag_without_leaking(corpus, make_context, monkeypatch):
    use_extractor(monkeypatch, vocab)
    model = ByPrompt(seen=[])
    ctx = make_context(
        chat_model=model, tenant="acme", routes={"global_summary": "graphrag", "single_hop": "graphrag"}
    )
    for question in (GLOBAL, "Who paid Ilsa Brandt in Zurich?"):
        get_graph("auto", retry_policy=FAST).invoke({"question": question}, context=ctx)
    assert any("Key points, as JSON" in p for p in model.seen)
    assert "SECRET-7731" not in model.prompts()


def test_a_deny_filter_on_a_member_chunk_hides_the_report(corpus, make_context):
    out, model, _ = run(make_context, graphrag_search="global", tenant="acme")
    assert "TABLE-CANARY" in model.prompts()  # control: without the filter the table's report is read
    out, model, _ = run(
        make_context, graphrag_search="global", tenant="acme", search_filter='kind != "table"'
    )
    assert "TABLE-CANARY" not in model.prompts()
    assert "t1" not in {str(d.id) for d in out["documents"]}


def test_unparseable_map_replies_give_no_points_and_the_run_says_so(corpus, make_context):
    out, model, ctx = run(make_context, **READABLE_GLOBAL, garbled="Report 1")
    check_contract(out, method="graphrag", ctx=ctx)
    notes = [s["text"] for s in out["steps"] if s["node"] == "map_reports"]
    assert notes and "reply not parsed" in notes[0]
    reduced = [s["text"] for s in out["steps"] if s["node"] == "reduce"]
    assert reduced[0].startswith("no key points; 2 reports whose map reply was not read"), reduced
    assert {str(d.id) for d in out["documents"]} == {"h1", "h2", "m1", "m2"}  # the unread reports' passages
    assert "Key points:\n(none)" in model.seen[-1]  # the answer is not told of points that were never made


def test_map_replies_that_find_no_point_leave_no_evidence(corpus, make_context, monkeypatch):
    monkeypatch.setattr(ByPrompt, "_generate", _no_points)
    out, model, ctx = run(make_context, **READABLE_GLOBAL)
    assert out["outcome"] == "no_evidence" and out["documents"] == [] and out["citations"] == []


def _no_points(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
    text = "\n".join(str(m.content) for m in messages)
    self.seen.append(text)
    reply = '{"points": []}' if "Key points, as JSON" in text else "I do not know."
    usage = {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}
    return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply, usage_metadata=usage))])


def test_one_unparseable_batch_leaves_the_others_points(corpus, make_context):
    out, model, ctx = run(
        make_context,
        **READABLE_GLOBAL,
        graphrag_batch=1,
        garbled="Lunmar",
    )
    check_contract(out, method="graphrag", ctx=ctx)
    assert {str(d.id) for d in out["documents"]} == {"h1", "h2"} and out["outcome"] == "answered"


def test_auto_search_takes_global_for_broad_questions_and_local_otherwise(corpus, make_context, monkeypatch):
    use_extractor(monkeypatch, vocab)
    for question, expected in ((GLOBAL, "global"), ("Who is the mayor of Korvik?", "local")):
        out, _, _ = run(make_context, question, tenant="acme")  # GLOBAL is a shipped global_summary example
        decided = [s["text"] for s in out["steps"] if s["kind"] == "decide"]
        assert decided and decided[0].startswith(expected), decided


def test_without_reports_the_method_names_the_command(index, make_context):
    index.add(
        [Document(page_content="Korvik.", metadata={"chunk_id": "x", "source": "a.md", "kind": "text"})]
    )
    with pytest.raises((RunFailed, ValueError), match="rag-graphs graph communities"):
        get_graph("graphrag", retry_policy=FAST).invoke(
            {"question": GLOBAL}, context=make_context(chat_model=ByPrompt(seen=[]))
        )


def test_the_router_and_the_budget_helpers():
    assert route_search({"search": "global"}) == "load_reports"
    assert route_search({"search": "local"}) == "retrieve"
    assert within(["aaaa", "bbbb", "cccc"], 9) == 2 and within(["a" * 50], 9) == 1 and within([], 9) == 0
    a, b = (Document(page_content=x, id=x) for x in "ab")
    c = Document(page_content="c", id="c")
    assert [d.id for d in interleave([[a, b], [c, a]])] == ["a", "c", "b"]


def test_the_demo_reads_a_global_run(corpus, make_context):
    from rag_graphs.cli.demo import global_lines

    out, _, _ = run(make_context, **READABLE_GLOBAL, graphrag_batch=1)
    text = "\n".join(global_lines(out, 1.0))
    assert "2 map calls" in text and "answered" in text
    cited = text.split("cited files:")[1].split("\n")[0]
    assert any(f"h{n}.md" in cited for n in (1, 2)) and any(f"m{n}.md" in cited for n in (1, 2)), cited


def test_auto_sends_global_questions_to_graphrag_by_default_when_there_are_reports(corpus, make_context):
    model = ByPrompt(seen=[])
    ctx = make_context(chat_model=model)  # the default routes
    out = get_graph("auto", retry_policy=FAST).invoke({"question": GLOBAL}, context=ctx)
    assert out["steps"][0]["text"].startswith("global_summary -> graphrag (nearest example"), out["steps"][0]
    assert any("Key points, as JSON" in p for p in model.seen)  # graphrag's global search ran


def test_global_search_maps_the_level_asked_or_the_coarsest_below_it(corpus, make_context):
    chunks = ["h1", "h2", "m1", "m2"]
    coarse = Document(
        id=report_id(1, chunks),
        page_content=report_text("All the towns COARSE", "Korvik and Lunmar.", []),
        metadata={
            "kind": REPORT_KIND,
            "level": 1,
            "parent": "",
            "community": "towns",
            "title": "All the towns",
            "summary": "Korvik and Lunmar.",
            "rating": 5.0,
            "findings": [],
            "entities": ["korvik", "lunmar"],
            "chunks": chunks,
            "tenant": "acme",
            "tags": [],
            "source": "",
        },
    )
    add_reports(corpus, [coarse])
    for level, expected in ((1, 1), (5, 1), (0, 2)):  # level 5: the coarsest level below it, 1
        _, model, _ = run(make_context, **READABLE_GLOBAL, graphrag_level=level)
        maps = [p for p in model.seen if "Key points, as JSON" in p]
        assert len(maps) == 1 and maps[0].count("Report ") == expected, (level, maps)
        assert ("COARSE" in maps[0]) == (expected == 1)


def test_a_score_out_of_range_is_clamped_not_fatal(corpus, make_context, monkeypatch):
    def high(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        text = "\n".join(str(m.content) for m in messages)
        self.seen.append(text)
        points = [{"description": "Korvik is a harbour", "score": 250, "reports": [1]}]
        reply = json.dumps({"points": points}) if "Key points, as JSON" in text else "Korvik [1]."
        usage = {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(content=reply, usage_metadata=usage))]
        )

    monkeypatch.setattr(ByPrompt, "_generate", high)
    out, model, _ = run(make_context, **READABLE_GLOBAL)
    assert "(importance 100) Korvik is a harbour" in model.seen[-1] and out["documents"]


def test_the_demo_says_why_a_global_run_cites_nothing():
    from rag_graphs.cli.demo import global_lines

    empty = {
        "answer": "x",
        "documents": [],
        "citations": [],
        "steps": [],
        "usage": {},
        "outcome": "no_evidence",
    }
    assert "no key point came out of the map step" in "\n".join(global_lines(empty, 1.0))
