"""The Python snippets of the README and the ``docs/`` guides run as written, on the embedded models,
after ``rag-graphs ingest`` of the demo corpus. (``tests/unit/test_docs.py`` checks the rest of what
they show without a model: command lines, JSON, links, the README's length.)"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
from langchain_core.caches import InMemoryCache

from rag_graphs import RagContext
from rag_graphs.config.fields import DEFAULT_COLLECTION, DEFAULT_STORE_URI
from rag_graphs.ingestion import IngestOptions, ingest
from tests.conftest import replies_from
from tests.snippets import README, snippets

SNIPPETS = snippets("python")

pytestmark = pytest.mark.embedded


def test_the_readme_and_the_guides_have_python_snippets():
    pages = {snippet.page for snippet in SNIPPETS}
    assert README in pages and len(pages) >= 4 and len(SNIPPETS) >= 8


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: s.name)
def test_a_doc_snippet_runs(snippet, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default store is relative: .rag-graphs/milvus.db here
    corpus = Path(str(resources.files("rag_graphs").joinpath("demo_corpus")))
    report = ingest(
        [corpus],
        index=RagContext(store_uri=DEFAULT_STORE_URI, collection=DEFAULT_COLLECTION),
        options=IngestOptions(progress=False),
    )
    assert not report.failed
    namespace: dict = {}
    # A prompt a snippet sends again (running.md runs a question, then streams it) is answered
    # once: the second run's chain is the first's (tests/conftest.py, replies_from).
    with replies_from(InMemoryCache()):
        exec(compile(snippet.code, snippet.name, "exec"), namespace)  # noqa: S102 - our own docs
    out = namespace.get("out")
    if out is not None:  # the snippets that ask a question show the output contract
        # the embedded default's extract reader answers with no model call: usage counts the search
        assert out["answer"] and out["citations"] and out["usage"]["retrievals"] >= 1
