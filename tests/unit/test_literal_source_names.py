"""Source names are matched literally (issue 50, item 6): ``%`` and ``_`` in a name a caller sends
are characters of that name, never SQL LIKE wildcards, so a caller cannot probe for another
tenant's source names with them."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from rag_graphs.serve.access import check_writable
from rag_graphs.serve.requests import IndexRequestError
from rag_graphs.store.filters import starts_with

FIELD = "IndexRequest.texts[0].source"
STORED = {  # source: tenant
    "text://payroll/2024": "globex",
    "text://50%_off/terms": "globex",
    "text://notes/a": "acme",
    "text://a\\b/c": "globex",
    "text://café/menu": "globex",
}


@pytest.fixture
def stored(index):
    index.add(
        [
            Document(
                page_content=f"Text of {source}.",
                metadata={"chunk_id": f"c{i}", "source": source, "tenant": tenant, "tags": []},
            )
            for i, (source, tenant) in enumerate(STORED.items())
        ]
    )
    return index


@pytest.mark.parametrize(
    "probe",
    ["text://pay%", "text://%", "text://p_yroll", "text://payroll_2024", "text://50%", "text://50__off"],
)
def test_wildcards_in_a_name_probe_no_other_tenants_source(stored, make_context, probe):
    """Each probe names no stored source: adding it is allowed, as for any new name (the refusal
    said "stored already under access you cannot read": an oracle for globex's names)."""
    check_writable(stored, make_context(tenant="acme"), [(FIELD, probe)])


@pytest.mark.parametrize(
    "name", ["text://payroll/2024", "text://payroll", "text://50%_off", "text://50%_off/terms"]
)
def test_a_name_stored_by_another_tenant_is_still_refused(stored, make_context, name):
    """The same source, or a folder holding one, literally: refused as before."""
    with pytest.raises(IndexRequestError, match="stored already under access you cannot read"):
        check_writable(stored, make_context(tenant="acme"), [(FIELD, name)])


def test_starts_with_matches_the_prefix_literally(stored):
    def matched(prefix: str) -> set[str]:
        return {str(d.metadata["source"]) for d in stored.where(starts_with("source", prefix), limit=10)}

    assert matched("text://50%_off/") == {"text://50%_off/terms"}
    assert matched("text://50%") == {"text://50%_off/terms"}
    assert matched("text://5") == {"text://50%_off/terms"}
    assert matched("text://%") == set()
    assert matched("text://p_y") == set()
    assert matched("text://a\\b/") == {"text://a\\b/c"}
    assert matched("text://café") == {"text://café/menu"}
    assert matched("text://caf") == {"text://café/menu"}
    assert matched('text://a\\b"') == set()
    assert matched("text://") == set(STORED) == matched("")
