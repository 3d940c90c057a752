"""How many of the project's modules one question runs through on the default path (issue 48
item 6), counted as docs/architecture.md counts it: the modules whose code executes while
``naive`` answers a second question (the first warms the caches), on a store with an entity
graph (so graph search), with the extract reader. The ceiling is the page's number: a change
that threads a question through more modules has to say so there."""

from __future__ import annotations

import re
import sys
import threading
from pathlib import Path

from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.methods import get_graph
from tests.unit.test_default_search import FILES

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIRS = tuple(str(ROOT / d) for d in ("rag_graphs", "ingestion", "prompts"))


def _modules_run(call) -> set[str]:
    seen: set[str] = set()

    def profile(frame, event, arg):
        name = frame.f_code.co_filename
        if event == "call" and name.startswith(PACKAGE_DIRS):
            seen.add(str(Path(name).relative_to(ROOT)))

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return seen


def _stated_ceiling() -> int:
    text = (ROOT / "docs" / "architecture.md").read_text()
    match = re.search(r"runs through at most (\d+) of the project's modules", text)
    assert match, "docs/architecture.md states no module count for a question"
    return int(match.group(1))


def test_a_question_on_the_default_path_runs_through_the_modules_the_architecture_states(
    tmp_path, index, make_context
):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in FILES.items():
        (docs / name).write_text(text)
    ingest([docs], index=index, options=IngestOptions(progress=False, timeout=None))
    ctx = make_context(collection=index.collection, reader="extract")
    graph = get_graph("naive")
    graph.invoke({"question": "Who founded the Velmora Institute?"}, context=ctx)

    out: dict = {}
    modules = _modules_run(
        lambda: out.update(graph.invoke({"question": "Where was Ilsa Brandt born?"}, context=ctx))
    )
    assert out["answer"].startswith("Korvik")  # the default path answered: graph search, the reader
    assert "rag_graphs/entity_graph/graph_search.py" in modules and "rag_graphs/text/reader.py" in modules
    assert len(modules) <= _stated_ceiling(), sorted(modules)
