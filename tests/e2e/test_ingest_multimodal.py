"""A mixed folder on the embedded embeddings: tables and pictures are found by questions about them."""

from __future__ import annotations

import pytest

from rag_graphs import RagContext
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.store import load_embeddings, open_index
from tests import doc_fixtures as fx

# one worker sets up this file's server or store (xdist_group: tests/conftest.py)
pytestmark = [pytest.mark.embedded, pytest.mark.xdist_group("multimodal_store")]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    docs = tmp_path_factory.mktemp("mixed")
    fx.docx(docs), fx.pptx(docs), fx.xlsx(docs), fx.html(docs), fx.pdf(docs)
    fx.picture(docs / "sea.png")
    (docs / "notes.md").write_text("# Crew\n\nThe Kestrel crew is led by Mara Voss, a hydrographer.\n")
    uri = str(tmp_path_factory.mktemp("store") / "milvus.db")
    report = ingest(
        [docs], index=RagContext(store_uri=uri, collection="mixed"), options=IngestOptions(progress=False)
    )
    assert not report.failed, report.summary()
    assert set(report.kinds) == {"text", "table", "picture"}
    return open_index(uri, "mixed", load_embeddings("embedded"))


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_a_question_about_a_table_finds_the_table(index, mode):
    hits = index.search("What is the range in km of the Petrel glider?", k=3, mode=mode)
    assert any(d.metadata["kind"] == "table" and "| Petrel" in d.page_content for d, _ in hits)


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_a_question_about_a_picture_caption_finds_the_picture(index, mode):
    hits = index.search("diving profile figure of the Kestrel glider", k=3, mode=mode)
    pictures = [d for d, _ in hits if d.metadata["kind"] == "picture"]
    assert pictures and fx.PICTURE_CAPTION in pictures[0].page_content
    assert pictures[0].metadata["captioner"] == "fallback" and pictures[0].metadata["crefs"]
