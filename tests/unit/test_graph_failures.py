"""Graph search fails cleanly: its threads end with it, and spaCy's length limit is said in one line.

Issue 41: after graph search failed while parsing the question, the run ended but the process
never exited: the first searches' worker thread, started before the question's NER, was still
in a Milvus Lite call when the run closed the store, blocked on the shut-down server, and the
interpreter waits for such a thread at exit. Each failure path runs in a subprocess here, with a
first search that blocks for good if the store is closed while it is in flight (what the real
server did); the process must exit by itself.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from rag_graphs.entity_graph.entities import SpacyExtractor, TextTooLong

SCRIPT = textwrap.dedent(
    """
    import sys, threading
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from rag_graphs.entity_graph import first_search, graph_search, linking
    from rag_graphs.entity_graph.build import add_entities
    from rag_graphs.entity_graph.entities import annotate
    from rag_graphs.store import ChunkIndex

    uri, paths = sys.argv[1], sys.argv[2:]
    names = ["Ilsa Brandt", "Korvik", "Osric Vale"]
    extract = lambda texts: [[n for n in names if n in t] for t in texts]
    index = ChunkIndex(uri=uri, collection="fail", embeddings=DeterministicFakeEmbedding(size=16))
    texts = {"p1": "Ilsa Brandt was born in Korvik.", "p2": "Korvik's mayor is Osric Vale."}
    docs = [
        Document(page_content=text, metadata={"chunk_id": cid, "source": cid, "kind": "text"})
        for cid, text in texts.items()
    ]
    found = annotate(docs, extract)
    index.add(docs)
    add_entities(index, docs, found)
    index.flush()

    closed = threading.Event()
    search = first_search.search_first_hits

    def in_flight(*args, **kwargs):  # a first search still running when the store closes blocks for good
        if closed.wait(timeout=1.0):
            threading.Event().wait()
        if path == "search":
            raise RuntimeError("first search failed")
        return search(*args, **kwargs)

    def failing(texts):
        raise ValueError("NER failed")

    def walk_fails(*args, **kwargs):
        raise RuntimeError("walk failed")

    first_search.search_first_hits = in_flight
    extractor, walk = linking.question_extractor, graph_search.walk
    for path in paths:
        linking.question_extractor, graph_search.walk = extractor, walk
        question = "Who is the mayor of the town where Ilsa Brandt was born?"
        if path == "ner":
            linking.question_extractor = lambda: failing
        elif path == "too_long":
            question = "Korvik " * 150_000  # over spaCy's 1,000,000 characters
        elif path == "walk":
            linking.question_extractor = lambda: extract
            graph_search.walk = walk_fails
        try:
            graph_search.graph_search(index, question, k=2)
        except Exception as error:
            print(f"{path}: raised {type(error).__name__}: {error}")
        left = [t.name for t in threading.enumerate() if t.name.startswith(first_search.THREAD_NAME)]
        print(f"{path}: threads left: {left}", flush=True)
    closed.set()
    index.client.close()
    print("exiting", flush=True)
    """
)


FAILURES = {
    "ner": "ValueError: NER failed",
    "too_long": "TextTooLong: text of 1,050,000 characters is longer than spaCy NER's limit",
    "search": "RuntimeError: first search failed",
    "walk": "RuntimeError: walk failed",
}
"""Failure path -> the error graph search raises there (the question's parsing by NER, a question
over spaCy's length limit, the first searches, the walk)."""


def test_the_process_exits_after_graph_search_fails_in_each_path(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "store.db"), *FAILURES],
        capture_output=True,
        text=True,
        timeout=600,  # generous: a hang is what fails here, never a slow machine
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for path, error in FAILURES.items():
        assert f"{path}: raised {error}" in done.stdout, done.stdout
        assert f"{path}: threads left: []" in done.stdout, done.stdout
    assert done.stdout.rstrip().endswith("exiting")


def test_a_text_over_spacys_limit_fails_in_one_line_naming_it():
    extractor = SpacyExtractor()
    limit = extractor._nlp.max_length
    with pytest.raises(TextTooLong) as raised:
        extractor(["short text about Korvik", "x" * (limit + 1)])
    message = str(raised.value)
    assert "\n" not in message and f"{limit:,}" in message and "E088" not in message
    assert isinstance(raised.value, ValueError)  # callers that catch ValueError still do
