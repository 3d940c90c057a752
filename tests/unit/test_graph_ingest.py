"""The entity graph kept current by ingest: annotate on the way in, links gone with replaced or
deleted files, and the hipporag method searching it end to end (scripted chat model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_graphs.config.graph_search import GraphSearchOptions
from rag_graphs.entity_graph.graph_search import graph_search
from rag_graphs.entity_graph.rows import has_graph
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.methods import get_graph
from rag_graphs.store.fields import ENTITIES_FIELD

FILES = {
    "institute.md": "# Velmora Institute\n\nThe Velmora Institute was founded by Ilsa Brandt in 1952.",
    "brandt.md": "# Ilsa Brandt\n\nIlsa Brandt was born in Korvik and studied in Lunmar.",
    "harbour.md": "# Harbour\n\nThe harbour of Osterby is busy in spring. Boats leave daily.",
}


def _write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def _entities(index) -> dict[str, list[str]]:
    rows = index.client.query(index.collection, filter="", output_fields=["source", ENTITIES_FIELD])
    out: dict[str, list[str]] = {}
    for row in rows:
        out.setdefault(Path(row["source"]).name, []).extend(row.get(ENTITIES_FIELD) or [])
    return out


def test_ingest_with_entities_stores_them_and_keeps_the_graph_current(tmp_path, index):
    folder = _write(tmp_path / "docs", FILES)
    ingest([folder], index=index, options=IngestOptions(entities="spacy", progress=False, timeout=None))
    stored = _entities(index)
    assert has_graph(index)
    assert "ilsa brandt" in stored["institute.md"] and "ilsa brandt" in stored["brandt.md"]
    assert "korvik" in stored["brandt.md"]

    # A changed file is re-annotated (no option needed: the collection has a graph) and its old
    # links go with its old chunks; a deleted source's links go with it.
    (folder / "brandt.md").write_text("# Ilsa Brandt\n\nIlsa Brandt was born in Dunmore.")
    ingest([folder], index=index, options=IngestOptions(progress=False, timeout=None))
    stored = _entities(index)
    assert "dunmore" in stored["brandt.md"] and "korvik" not in stored["brandt.md"]
    index.delete_source(str((folder / "harbour.md").resolve()))
    assert "harbour.md" not in _entities(index)
    hits = graph_search(index, "Where is Osterby harbour?", k=5).hits
    assert all(Path(d.metadata["source"]).name != "harbour.md" for d, _ in hits)


def test_a_bad_extractor_spec_fails_before_anything_is_stored(tmp_path, index):
    folder = _write(tmp_path / "docs", {"a.md": "# A\n\nAda Lovelace wrote notes."})
    with pytest.raises(ValueError, match="entity extractor 'nope'"):
        ingest([folder], index=index, options=IngestOptions(entities="nope", progress=False, timeout=None))
    assert index.count() == 0


def test_hipporag_reaches_the_second_hop_through_a_shared_entity(tmp_path, index, make_context):
    folder = _write(tmp_path / "docs", FILES)
    ingest([folder], index=index, options=IngestOptions(entities="spacy", progress=False, timeout=None))
    # Fake embeddings make the dense half of the blend random: rank by the walk alone (nothing
    # of hybrid's order kept on top).
    ctx = make_context(
        "Korvik [2].",
        k=2,
        collection=index.collection,
        graph_search=GraphSearchOptions(keep_first=0, keep_in_top=0),
    )
    out = get_graph("hipporag").invoke({"question": "Who founded the Velmora Institute?"}, context=ctx)
    sources = [Path(d.metadata["source"]).name for d in out["documents"]]
    assert sources[:2] == ["institute.md", "brandt.md"] or sources[:2] == ["brandt.md", "institute.md"]
    retrieve = next(s for s in out["steps"] if s["kind"] == "retrieve")
    assert retrieve["node"] == "retrieve" and "graph seeds:" in retrieve["text"]
    assert "velmora institute" in retrieve["text"].lower()
