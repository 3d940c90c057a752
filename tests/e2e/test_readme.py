"""The README's Python snippets run as written, on the embedded models, after `rag-graphs ingest`."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from rag_graphs.config.fields import DEFAULT_COLLECTION, DEFAULT_STORE_URI
from rag_graphs.ingestion import ingest

README = Path(__file__).resolve().parents[2] / "README.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)

pytestmark = pytest.mark.embedded


def test_the_readme_has_python_snippets():
    assert len(SNIPPETS) >= 2


@pytest.mark.parametrize("code", SNIPPETS, ids=[f"snippet{i}" for i in range(len(SNIPPETS))])
def test_readme_snippet_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default store is relative: .rag-graphs/milvus.db here
    corpus = Path(str(resources.files("rag_graphs").joinpath("demo_corpus")))
    report = ingest([corpus], uri=DEFAULT_STORE_URI, collection=DEFAULT_COLLECTION, progress=False)
    assert not report.failed
    namespace: dict = {}
    exec(compile(code, str(README), "exec"), namespace)  # noqa: S102 - our own README
    out = namespace.get("out")
    if out is not None:  # the snippets that ask a question show the output contract
        # the embedded default's extract reader answers with no model call: usage counts the search
        assert out["answer"] and out["citations"] and out["usage"]["retrievals"] >= 1
