"""Access control: per-call tenant/tag/source restrictions applied inside the search.

A forbidden chunk must never reach any prompt of any method, RAPTOR summaries
included; filter values are quoted so no value can widen the expression.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from rag_graphs.catalog import METHODS
from rag_graphs.entity_graph.build import build_graph
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.ingestion.community_reports import build_reports
from rag_graphs.ingestion.raptor import build_tree, shared_labels
from rag_graphs.llm.structured import invoke_structured
from rag_graphs.methods import get_graph
from rag_graphs.search.retrieval import search
from rag_graphs.store import access_filter
from tests.adversarial import SCRIPT, obedient, recording_web_search
from tests.entities import capitalised
from tests.unit.test_faults import FAST

QUESTION = "Where was Ilsa Brandt born?"
SECRET = "SECRET-CANARY-7731"


class Echo(BaseChatModel):
    """A summariser that copies its whole prompt into the summary (the leakiest possible one)."""

    @property
    def _llm_type(self) -> str:
        return "echo"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        text = "\n".join(str(m.content) for m in messages)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


@pytest.fixture
def shared(demo_corpus: Path, index, tmp_path: Path):
    """One collection, three owners: acme (the demo corpus), globex (a secret), nobody (unlabelled)."""
    ingest([demo_corpus], index=index, options=IngestOptions(tenant="acme", tags=["public"], progress=False))
    secret = tmp_path / "globex"
    secret.mkdir()
    (secret / "payroll.md").write_text(
        f"# Ilsa Brandt\n\nIlsa Brandt was born in Zurich, says {SECRET}. Ilsa Brandt's salary is 9,000.\n"
    )
    ingest([secret], index=index, options=IngestOptions(tenant="globex", tags=["hr"], progress=False))
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "note.md").write_text(f"# Ilsa Brandt\n\nIlsa Brandt note without labels {SECRET}-2.\n")
    ingest([loose], index=index, options=IngestOptions(progress=False))
    build_tree(index, Echo(), progress=False)  # summaries repeat their children: a leak would show
    build_graph(index, capitalised, progress=False)  # hipporag's graph search needs it
    build_reports(index, Echo(), ask=invoke_structured, progress=False)  # graphrag's, leaky too
    return index


CASES = [(m, {}) for m in METHODS if m != "graphrag"] + [
    ("react", {"tool_calling": "native"}),
    ("auto", {"router": "llm"}),
    ("graphrag", {"graphrag_search": "global"}),  # the map prompt shows every readable report
    ("graphrag", {"graphrag_search": "local"}),
]


@pytest.mark.parametrize(
    ("method", "overrides"),
    CASES,
    ids=[f"{m}-{o.get('tool_calling', o.get('graphrag_search', ''))}" for m, o in CASES],
)
def test_a_forbidden_chunk_never_reaches_any_prompt(shared, make_context, method, overrides):
    model = obedient(*SCRIPT)
    ctx = make_context(
        chat_model=model,
        tenant="acme",
        k=20,
        max_steps=4,
        max_hops=2,
        web_search=recording_web_search([]),
        **overrides,
    )
    out = get_graph(method, retry_policy=FAST).invoke({"question": QUESTION}, context=ctx)
    assert SECRET not in model.prompts_text()
    assert all(SECRET not in d.page_content for d in out["documents"])
    assert all(d.metadata.get("tenant") in ("acme", None) for d in out["documents"])  # None: web results
    assert "Ilsa Brandt" in model.prompts_text() and out["usage"].get("retrievals")  # it did search


def test_control_without_the_restriction_the_secret_is_retrieved(shared, make_context):
    model = obedient(*SCRIPT)
    get_graph("naive").invoke({"question": QUESTION}, context=make_context(chat_model=model, k=20))
    assert SECRET in model.prompts_text()


def test_tags_and_sources_restrict_and_combine(shared, make_context, demo_corpus):
    def found(**access) -> set[str]:
        docs = search(make_context(k=50, **access), "Ilsa Brandt born")
        return {Path(d.metadata["source"]).parent.name for d in docs}

    assert found(tags=("hr",)) == {"globex"}
    assert found(tags=("public", "hr")) == {demo_corpus.name, "globex"}  # any of the tags
    assert found(tenant="acme", tags=("hr",)) == set()  # all restrictions hold at once
    payroll = next(s for s in shared.sources() if s.endswith("payroll.md"))
    assert found(sources=(payroll,)) == {"globex"}
    assert found() >= {demo_corpus.name, "globex", "loose"}


@pytest.mark.parametrize(
    "hostile",
    [
        'acme" or tenant != "',
        'acme\\" or tenant != \\"',
        "acme' or '1'='1",
        'x" || source like "%',
        "acme\nor true",
    ],
)
def test_filter_values_cannot_widen_the_expression(shared, make_context, hostile):
    assert search(make_context(k=50, tenant=hostile), "Ilsa Brandt") == []
    assert search(make_context(k=50, tags=(hostile,)), "Ilsa Brandt") == []
    assert search(make_context(k=50, sources=(hostile,)), "Ilsa Brandt") == []


def test_the_expression_quotes_every_value():
    expr = access_filter(tenant='a"b', tags=["x\\"], sources=["/p/q.md"])
    assert expr == 'tenant == "a\\"b" and json_contains_any(tags, ["x\\\\"]) and source in ["/p/q.md"]'
    assert access_filter() is None


def test_summaries_carry_only_the_labels_every_child_carries():
    def doc(tenant, tags):
        return Document(page_content="x", metadata={"tenant": tenant, "tags": tags})

    assert shared_labels([doc("acme", ["a", "b"]), doc("acme", ["b"])]) == {"tenant": "acme", "tags": ["b"]}
    assert shared_labels([doc("acme", ["a"]), doc("globex", ["a"])]) == {"tags": ["a"]}
    assert shared_labels([doc("acme", ["a"]), doc(None, [])]) == {}


def test_relabelling_a_file_replaces_its_chunks(index, tmp_path, make_context):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "memo.md").write_text("# Memo\n\nIlsa Brandt was born in Korvik.\n")
    first = ingest([folder], index=index, options=IngestOptions(tenant="acme", progress=False))
    second = ingest([folder], index=index, options=IngestOptions(tenant="globex", progress=False))
    assert second.files[0].removed_stale == first.chunks == second.chunks
    assert search(make_context(tenant="acme"), "Ilsa Brandt") == []
    assert [d.metadata["tenant"] for d in search(make_context(tenant="globex"), "Ilsa Brandt")] == ["globex"]


def test_bad_labels_are_refused_before_anything_is_stored(index, tmp_path):
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    with pytest.raises(ValueError, match="ingest: tenant=''"):
        ingest([tmp_path], index=index, options=IngestOptions(tenant="", progress=False))
    with pytest.raises(ValueError, match="ingest: tags="):
        ingest([tmp_path], index=index, options=IngestOptions(tags=["ok", 3], progress=False))
    assert index.count() == 0
