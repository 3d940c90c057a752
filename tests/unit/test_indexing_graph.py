"""The indexing graph (``rag_graphs.serve.indexing``) in process, on a temporary Milvus Lite store
with fake embeddings: what it adds is stored and searchable, what it deletes is gone, what it
relabels is found under the new label only, bad input changes nothing, and a caller with a tenant
writes, deletes and relabels inside that tenant only."""

from __future__ import annotations

import pytest

from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.search.retrieval import search
from rag_graphs.serve.indexing import FILES_ROOTS, _check_file, graph
from rag_graphs.serve.requests import IndexRequestError
from rag_graphs.store.filters import quote

MEMO = "# Memo\n\nThe Halden vault code is ORCHID-7731, kept by the board.\n"
NOTE = "# Note\n\nKorvik harbour opens at dawn; the ferry leaves at nine.\n"


def _run(make_context, request: dict, **access) -> dict:
    return graph.invoke(request, context=make_context(k=10, search_cache=0, **access))


def _texts(make_context, query: str, **access) -> list[str]:
    return [d.page_content for d in search(make_context(k=10, search_cache=0, **access), query)]


def _rows(index, source: str) -> list:
    return index.where(f"source == {quote(source)}", limit=1000)


def test_added_texts_are_reported_stored_and_searchable(index, make_context):
    out = _run(make_context, {"texts": [{"source": "memo", "text": MEMO}, {"source": "note", "text": NOTE}]})
    added = out["added"]
    assert [f["path"] for f in added["files"]] == ["text://memo", "text://note"]
    assert added["failed"] == 0 and added["chunks"] == added["added"] > 0
    assert out["total_chunks_in_store"] == index.count() == added["chunks"]
    assert set(index.sources()) == {"text://memo", "text://note"}
    assert any("ORCHID-7731" in t for t in _texts(make_context, "Halden vault code"))
    assert "2 file(s) ingested" in out["summary"]
    again = _run(make_context, {"texts": [{"source": "memo", "text": MEMO}]})  # the same text: stored once
    assert again["added"]["added"] == 0 and index.count() == added["chunks"]


def test_a_deleted_source_is_gone_and_the_others_stay(index, make_context):
    _run(make_context, {"texts": [{"source": "memo", "text": MEMO}, {"source": "note", "text": NOTE}]})
    out = _run(make_context, {"delete": ["text://memo"]})
    assert out["deleted"] == [{"target": "text://memo", "sources": ["text://memo"], "chunks": 1}]
    assert set(index.sources()) == {"text://note"}
    assert not any("ORCHID" in t for t in _texts(make_context, "Halden vault code"))


def test_a_relabelled_source_is_found_under_its_new_label_only(index, make_context):
    _run(make_context, {"texts": [{"source": "memo", "text": MEMO}], "tenant": "acme"})
    _run(make_context, {"texts": [{"source": "note", "text": NOTE}], "tenant": "acme"})
    assert any("ORCHID" in t for t in _texts(make_context, "Halden vault code", tenant="acme"))
    out = _run(make_context, {"relabel": [{"source": "text://memo", "tenant": "globex", "tags": ["board"]}]})
    assert out["relabelled"] == [
        {"source": "text://memo", "chunks": 1, "tenant": "globex", "tags": ["board"]}
    ]
    assert not any("ORCHID" in t for t in _texts(make_context, "Halden vault code", tenant="acme"))
    assert any(
        "ORCHID" in t for t in _texts(make_context, "Halden vault code", tenant="globex", tags=("board",))
    )
    rows = _rows(index, "text://memo")
    assert len(rows) == 1 and rows[0].metadata["tenant"] == "globex" and rows[0].metadata["tags"] == ["board"]
    assert [r.metadata.get("tenant") for r in _rows(index, "text://note")] == ["acme"]  # untouched


def test_a_relabelled_file_converts_again_on_its_next_ingest(index, make_context, tmp_path):
    """The file's ingest record names its old labels: a re-ingest must not trust it."""
    path = tmp_path / "memo.md"
    path.write_text(MEMO)
    ingest([path], index=index, options=IngestOptions(tenant="acme", progress=False))
    _run(make_context, {"relabel": [{"source": str(path), "tenant": "globex"}]})
    report = ingest([path], index=index, options=IngestOptions(tenant="acme", progress=False))
    assert not report.unchanged and report.added == 1
    assert [r.metadata["tenant"] for r in _rows(index, str(path))] == ["acme"]


@pytest.mark.parametrize(
    ("request_", "names"),
    [
        ({"texts": [{"source": "  ", "text": "x"}]}, "IndexRequest.texts[0].source"),
        ({"texts": [{"source": "a", "text": ""}]}, "IndexRequest.texts[0].text"),
        ({"urls": ["file:///etc/passwd"]}, "IndexRequest.urls"),
        ({"files": ["/no/such/file.md"], "delete": ["text://memo"]}, "IndexRequest.files"),
        ({"delete": ["text://memo", "text://nothing"]}, "IndexRequest.delete: 'text://nothing'"),
        ({"relabel": [{"source": "text://memo", "tenant": ""}]}, "IndexRequest.relabel[0].tenant"),
        ({"delete": ["text://memo"], "relabel": [{"source": "text://memo"}]}, "also deleted"),
        ({"texts": [{"source": "a", "text": "x"}], "tags": ["ok", " "]}, "IndexRequest.tags[1]"),
        ({}, "nothing to do"),
    ],
)
def test_bad_input_is_one_line_naming_the_field_and_changes_nothing(index, make_context, request_, names):
    _run(make_context, {"texts": [{"source": "memo", "text": MEMO}]})
    before = index.count()
    with pytest.raises(IndexRequestError) as caught:
        _run(make_context, request_)
    assert names in str(caught.value) and "\n" not in str(caught.value)
    assert index.count() == before and set(index.sources()) == {"text://memo"}


def test_a_tenant_caller_writes_and_deletes_inside_its_tenant_only(index, make_context):
    _run(make_context, {"texts": [{"source": "globex-memo", "text": MEMO}]}, tenant="globex")
    out = _run(make_context, {"texts": [{"source": "acme-note", "text": NOTE}]}, tenant="acme")
    assert out["added"]["added"] == 1
    assert [r.metadata.get("tenant") for r in _rows(index, "text://acme-note")] == ["acme"]
    with pytest.raises(
        IndexRequestError, match=r"IndexRequest.tenant='globex': you may write only to tenant 'acme'"
    ):
        _run(make_context, {"texts": [{"source": "x", "text": NOTE}], "tenant": "globex"}, tenant="acme")
    for request_ in (
        {"delete": ["text://globex-memo"]},
        {"relabel": [{"source": "text://globex-memo", "tenant": "acme"}]},
    ):
        with pytest.raises(IndexRequestError, match="not a stored source you can read"):
            _run(make_context, request_, tenant="acme")
    assert [r.metadata.get("tenant") for r in _rows(index, "text://globex-memo")] == ["globex"]
    out = _run(make_context, {"delete": ["text://"]}, tenant="acme")  # a prefix of every text source
    assert out["deleted"] == [{"target": "text://", "sources": ["text://acme-note"], "chunks": 1}]
    assert set(index.sources()) == {"text://globex-memo"}


def test_a_caller_with_tags_writes_only_its_tags(index, make_context):
    with pytest.raises(IndexRequestError, match=r"IndexRequest.tags=\['hr'\]: you may write only tags"):
        _run(make_context, {"texts": [{"source": "x", "text": NOTE}], "tags": ["hr"]}, tags=("board",))
    _run(make_context, {"texts": [{"source": "x", "text": NOTE}]}, tags=("board",))
    assert [r.metadata.get("tags") for r in _rows(index, "text://x")] == [["board"]]


def test_a_served_graph_reads_files_only_under_the_deployments_folders(tmp_path, monkeypatch):
    inside, outside = tmp_path / "docs", tmp_path / "private"
    for folder in (inside, outside):
        folder.mkdir()
        (folder / "a.md").write_text(NOTE)
    monkeypatch.setenv("RAG_GRAPHS_SERVED", "1")
    monkeypatch.delenv(FILES_ROOTS, raising=False)
    with pytest.raises(IndexRequestError, match="reads no files of its own"):
        _check_file(str(inside / "a.md"))
    monkeypatch.setenv(FILES_ROOTS, str(inside))
    _check_file(str(inside / "a.md"))
    for refused in (str(outside / "a.md"), str(inside / ".." / "private" / "a.md"), "docs/a.md"):
        with pytest.raises(IndexRequestError, match="not under the folders"):
            _check_file(refused)
    (inside / "link.md").symlink_to(outside / "a.md")
    with pytest.raises(IndexRequestError, match="not under the folders"):
        _check_file(str(inside / "link.md"))


def test_the_input_schema_documents_every_field():
    """The schema Studio shows and the server publishes as the MCP tool's input."""
    schema = graph.get_input_jsonschema()
    assert schema["description"].startswith("Change what the store holds")
    assert all(p.get("description") for p in schema["properties"].values()), schema["properties"]
    assert set(graph.get_output_jsonschema()["properties"]) == {
        "deleted",
        "relabelled",
        "added",
        "total_chunks_in_store",
        "summary",
    }


def test_the_graph_does_not_block_the_event_loop(index, make_context):
    from tests.unit.test_no_blocking import run_watched

    ctx = make_context(k=10, search_cache=0)
    out = run_watched(lambda: graph.ainvoke({"texts": [{"source": "memo", "text": MEMO}]}, context=ctx))
    assert out["added"]["added"] == 1
    out = run_watched(lambda: graph.ainvoke({"delete": ["text://memo"]}, context=ctx))
    assert out["deleted"][0]["chunks"] == 1


def test_a_tenant_cannot_replace_another_tenants_source_by_adding_one_of_that_name(index, make_context):
    """Sources are one namespace: a new version of a source replaces every stored version of it."""
    _run(make_context, {"texts": [{"source": "memo", "text": MEMO}]}, tenant="globex")
    with pytest.raises(IndexRequestError, match=r"IndexRequest.texts\[0\].source: 'text://memo' is stored"):
        _run(make_context, {"texts": [{"source": "memo", "text": NOTE}]}, tenant="acme")
    assert [r.metadata.get("tenant") for r in _rows(index, "text://memo")] == ["globex"]
    out = _run(make_context, {"texts": [{"source": "memo", "text": NOTE}]}, tenant="globex")  # its own: fine
    assert out["added"]["files"][0]["removed_stale"] == 1


def test_a_source_readable_only_in_part_is_not_deleted(index, make_context):
    _run(make_context, {"texts": [{"source": "memo", "text": MEMO}]}, tenant="acme")
    (row,) = _rows(index, "text://memo")
    stray = {**row.metadata, "chunk_id": "stray", "tenant": "globex"}
    index.add([type(row)(id="stray", page_content="a globex line", metadata=stray)])
    with pytest.raises(IndexRequestError, match="'text://memo' holds chunks outside your access"):
        _run(make_context, {"delete": ["text://memo"]}, tenant="acme")
    assert len(_rows(index, "text://memo")) == 2


def test_a_url_on_the_servers_own_network_is_not_fetched(index, make_context, standin):
    """A client may not make the server read its loopback (the ingest's SSRF guard, no way around)."""
    url, received = standin
    out = _run(make_context, {"urls": [f"{url}/admin.md"]})
    (file,) = out["added"]["files"]
    assert file["path"] == f"{url}/admin.md" and "loopback" in file["error"] and out["added"]["failed"] == 1
    assert received == [] and index.count() == 0


EDITS = (
    (
        {"delete": ["text://acme-note"]},
        {"targets": {"text://acme-note": ["text://globex-memo"]}, "delete": ["text://globex-memo"]},
    ),
    (
        {"relabel": [{"source": "text://acme-note", "tenant": "acme"}]},
        {
            "request": {
                "relabel": [
                    {
                        "source": "text://acme-note",
                        "sources": ["text://globex-memo"],
                        "labels": {"tenant": "acme", "tags": []},
                    }
                ]
            },
            "relabel": [{"source": "text://globex-memo", "tenant": "acme"}],
        },
    ),
    (
        {"texts": [{"source": "acme-plan", "text": NOTE}]},
        {
            "request": {
                "files": [],
                "urls": [],
                "texts": [{"source": "planted", "text": MEMO, "format": "markdown"}],
                "labels": {"tenant": "globex", "tags": []},
                "force": False,
            },
            "tenant": "globex",
        },
    ),
)
"""(a request of acme's, the state edit made while it waits before its first write): deleting,
relabelling to acme, or writing into globex's tenant (attack round 4, item 1)."""


def test_a_write_node_trusts_no_state_its_caller_could_edit(index, make_context):
    """A run stopped before its writes, its state edited and resumed writes only what its caller
    may: every write node checks the request and the caller's access again."""
    from langgraph.checkpoint.memory import InMemorySaver

    from rag_graphs.serve.indexing import build

    served = build().compile(checkpointer=InMemorySaver())
    _run(make_context, {"texts": [{"source": "globex-memo", "text": MEMO}]}, tenant="globex")
    _run(make_context, {"texts": [{"source": "acme-note", "text": NOTE}]}, tenant="acme")
    acme = make_context(k=10, search_cache=0, tenant="acme")
    for n, (request_, edit) in enumerate(EDITS):
        config = {"configurable": {"thread_id": f"edit-{n}"}}
        served.invoke(request_, config, context=acme, interrupt_before=["delete"])
        try:
            served.update_state(config, edit, as_node="check")
        except Exception:  # a field the graph no longer keeps may not be written at all
            pass
        try:
            served.invoke(None, config, context=acme)
        except IndexRequestError as refused:
            assert "you can read" in str(refused) or "write only" in str(refused), refused
        assert [r.metadata.get("tenant") for r in _rows(index, "text://globex-memo")] == ["globex"], edit
        assert _rows(index, "text://planted") == []
    assert {r.metadata.get("tenant") for r in index.where('tenant == "globex"', limit=100)} == {"globex"}
    assert [r.metadata["source"] for r in index.where('tenant == "globex"', limit=100)] == [
        "text://globex-memo"
    ]
