"""A search filter can narrow what a caller sees, never widen it past the access labels.

One Milvus Lite store holds two tenants' chunks and unlabelled ones. Every
filter below is tried as ``RAG_GRAPHS_SEARCH_FILTER`` would be, beside
``tenant="acme"``: each must either be refused with an error naming the filter,
or find only acme's chunks. The first one is the breakout that used to cancel
the tenant restriction (``(1==1) or (1==1) and (tenant == "acme")``).
"""

from __future__ import annotations

import pytest

from rag_graphs.config.context import RagContext
from rag_graphs.config.specs import all_of
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.search.retrieval import search
from rag_graphs.store import ChunkIndex, access_filter

QUERY = "glider dive depth"

BREAKOUTS = [
    "1==1) or (1==1",  # closes the filter's parenthesis, or-s past the access expression
    "1==1)) or ((1==1",
    'tenant == "globex") or (tenant like "%"',
    "1==1] or [1==1",
    'source like "%) or (1==1',  # an open string swallows the closing parenthesis
    "tenant == 'acme",  # single-quoted string left open
    'tenant == "x\\") or (1==1',  # an escaped quote: the string never ends
    ") or (",
]

WRAPPED = [  # balanced, so parenthesised: each can only narrow
    "1==1",
    "1==1 or 1==1",
    "1==1 || true",
    'tenant == "globex" or tenant == "acme"',
    'tenant != "acme" or 1==1',
    "not (1==0)",
    'tenant == "globex" and 1==1 or 1==1',
    'tenant like "%" or not tenant like "%"',
    'source like "%) or (1==1%"',  # brackets inside a string are text, not structure
    "(((1==1)))",
]


@pytest.fixture(scope="module")
def two_tenants(tmp_path_factory: pytest.TempPathFactory, fake_embeddings) -> ChunkIndex:
    """acme's, globex's and unlabelled chunks, all about the same thing."""
    root = tmp_path_factory.mktemp("tenants")
    index = ChunkIndex(uri=str(root / "milvus.db"), collection="tenants", embeddings=fake_embeddings)
    for owner, labels in (("acme", {"tenant": "acme"}), ("globex", {"tenant": "globex"}), ("nobody", {})):
        folder = root / owner
        folder.mkdir()
        for i in range(3):
            (folder / f"{owner} {i}.md").write_text(
                f"# {owner} {i}\n\nThe {owner} glider dive {i} reached depth.\n"
            )
        ingest([folder], index=index, options=IngestOptions(progress=False, timeout=None, **labels))
    index.flush()
    return index


def _owners(index: ChunkIndex, expr: str | None) -> set[str | None]:
    return {d.metadata.get("tenant") for d, _ in index.search(QUERY, k=50, expr=expr)}


def test_the_store_holds_three_owners_and_a_pasted_breakout_would_reach_them_all(two_tenants):
    assert _owners(two_tenants, None) == {"acme", "globex", None}
    pasted = '(1==1) or (1==1) and (tenant == "acme")'  # what string pasting used to search
    assert _owners(two_tenants, pasted) == {"acme", "globex", None}


@pytest.mark.parametrize("breakout", BREAKOUTS)
def test_a_filter_that_breaks_out_of_its_parentheses_is_refused(breakout):
    with pytest.raises(ValueError, match="search filter"):
        all_of(breakout, access_filter(tenant="acme"))
    with pytest.raises(ValueError, match="search_filter"):
        RagContext(search_filter=breakout, tenant="acme")


@pytest.mark.parametrize("breakout", BREAKOUTS)
def test_a_breakout_from_the_environment_is_refused_naming_the_variable(breakout, monkeypatch):
    monkeypatch.setenv("RAG_GRAPHS_SEARCH_FILTER", breakout)
    with pytest.raises(ValueError, match="RAG_GRAPHS_SEARCH_FILTER"):
        RagContext(tenant="acme")


@pytest.mark.parametrize("trick", WRAPPED)
def test_operator_precedence_tricks_only_narrow_the_tenant(two_tenants, trick):
    expr = all_of(trick, access_filter(tenant="acme"))
    try:
        owners = _owners(two_tenants, expr)
    except Exception as exc:  # noqa: BLE001 - Milvus may refuse an odd expression: that is safe too
        assert "acme" not in str(type(exc)), exc
        return
    assert owners <= {"acme"}


def test_the_breakout_through_retrieval_finds_no_other_tenants_chunk(two_tenants, fake_embeddings):
    """The reported attack, end to end through the retriever every method uses."""
    where = dict(store_uri=two_tenants.uri, collection=two_tenants.collection, embeddings=fake_embeddings)
    with pytest.raises(ValueError, match="closes nothing it opened"):
        RagContext(search_filter="1==1) or (1==1", tenant="acme", **where)
    ctx = RagContext(search_filter="1==1 or 1==1", tenant="acme", k=50, **where)
    docs = search(ctx, QUERY)
    assert docs and {d.metadata.get("tenant") for d in docs} == {"acme"}


def test_balanced_filters_pass_unchanged():
    from rag_graphs.config.specs import check_filter

    for expr in WRAPPED:
        assert check_filter(expr) == expr
    assert all_of("a == 1", None, 'b == "x"') == '(a == 1) and (b == "x")'
    assert all_of(None, None) is None
