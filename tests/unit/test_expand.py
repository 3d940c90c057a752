"""Neighbour expansion of the shared retrieve step: hits bring their reading-order neighbours
from the same file within a token budget; the step names them; a bad spec names the setting."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rag_graphs.config.context import RagContext
from rag_graphs.methods.naive import graph
from rag_graphs.search.neighbours import NeighbourExpander
from rag_graphs.search.retrieval import search

QUESTION = "Where was Ilsa Brandt born?"


def test_neighbours_follow_their_hit_in_reading_order(make_context, loaded) -> None:
    (hit,) = search(make_context(search_cache=0), QUESTION, k=1)
    grown, added = NeighbourExpander(loaded, window=1, max_tokens=10_000).expand([hit])
    assert grown[0].id == hit.id and added
    at = hit.metadata["chunk_index"]
    for doc in grown[1:]:
        assert doc.metadata["source"] == hit.metadata["source"]
        assert abs(doc.metadata["chunk_index"] - at) == 1
        assert doc.metadata["expanded_from"] == hit.id
    tight, none_added = NeighbourExpander(loaded, window=1, max_tokens=1).expand([hit])
    assert [d.id for d in tight] == [hit.id] and none_added == []  # the budget holds


def test_the_retrieve_step_expands_and_says_what_it_added(make_context, loaded) -> None:
    plain = graph.invoke({"question": QUESTION}, context=make_context("Korvik.", k=2, search_cache=0))
    ctx = make_context("Korvik.", k=2, search_cache=0, expand="neighbours:1")
    out = graph.invoke({"question": QUESTION}, context=ctx)
    assert len(out["documents"]) > len(plain["documents"])
    (note,) = [s for s in out["steps"] if s["kind"] == "note" and s["text"].startswith("expand")]
    extra = {d.id for d in out["documents"]} - {d.id for d in plain["documents"]}
    assert extra and extra <= set(note["doc_ids"])


@pytest.mark.parametrize("spec", ["parent", "neighbours:", "neighbours:0", "neighbours:x"])
def test_a_bad_spec_names_the_setting(spec: str, monkeypatch) -> None:
    with pytest.raises(ValidationError, match="RagContext.expand=.*unknown expansion"):
        RagContext(expand=spec)
    monkeypatch.setenv("RAG_GRAPHS_EXPAND", spec)
    with pytest.raises(ValidationError, match="environment variable RAG_GRAPHS_EXPAND"):
        RagContext()
