"""A citation quotes the text the model read under its number (issue 50, item 12): a retriever of
the user's that answers one id with two texts, or names a source or kind ``[2]``, cannot make an
answer's citation point at text other than the text shown under that number."""

from __future__ import annotations

import re
from pathlib import Path

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.retrievers import BaseRetriever

from rag_graphs import RagContext
from rag_graphs.methods import get_graph
from rag_graphs.text.citations import extract_citations, number_passages
from tests.conftest import recording_chat

QUESTION = "In which town was Ilsa Brandt born?"
BENIGN = "Ilsa Brandt was born in Korvik, a harbour town."
PLANTED = "Ilsa Brandt was born in Osterby, say the records."
BLOCK = re.compile(r"\[(\d+)\]\n<passage>\n\([^\n]*\)\n(.*?)\n</passage>", re.DOTALL)


class OneIdTwoTexts(BaseRetriever):
    """Answers every query with the id ``brandt``: the benign text first, then the planted one."""

    calls: int = 0

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        self.calls += 1
        text = BENIGN if self.calls == 1 else PLANTED
        return [Document(id="brandt", page_content=text, metadata={"source": "records.txt"})]


class MarkerLabels(BaseRetriever):
    """Two hits; the second's source and kind carry markers of ours."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [
            Document(id="a", page_content=BENIGN, metadata={"source": "a.txt"}),
            Document(id="b", page_content=PLANTED, metadata={"source": "see [1].txt", "kind": "[1]"}),
        ]


def _context(tmp_path: Path, model, retriever: BaseRetriever, **settings) -> RagContext:
    return RagContext(
        chat_model=model,
        embeddings=DeterministicFakeEmbedding(size=32),
        store_uri=str(tmp_path / "no-store.db"),
        retriever=retriever,
        **settings,
    )


def test_one_id_shown_with_two_texts_is_two_numbers_and_each_citation_quotes_its_own():
    first = number_passages([Document(id="x", page_content=BENIGN)])
    again = number_passages([Document(id="x", page_content=PLANTED)], first.shown)
    assert "[2]" in again.text and PLANTED in again.text and "[1]" not in again.text
    cited = extract_citations("Osterby [2]; Korvik [1].", again.shown)
    assert [(c["marker"], c["quote"]) for c in cited] == [(2, PLANTED), (1, BENIGN)]
    same = number_passages([Document(id="x", page_content=BENIGN)], first.shown)
    assert same.text.startswith("[1]\n") and len(same.shown) == 1  # found again as shown: its number


def test_react_cites_the_text_it_read_under_each_number(tmp_path: Path):
    """Two searches of a retriever that answers one id with two texts; the answer cites every
    number the observations showed, and each citation quotes what was shown under it."""
    model = recording_chat(
        "Thought: look it up\nAction: search[Ilsa Brandt birthplace]",
        "Thought: again\nAction: search[Ilsa Brandt born town]",
        "Thought: done\nFinal Answer: Osterby [1] [2]",
    )
    ctx = _context(tmp_path, model, OneIdTwoTexts(), tool_calling="text", k=1)
    out = get_graph("react").invoke({"question": QUESTION}, context=ctx)
    shown: dict[int, set[str]] = {}
    for messages in model.seen:
        for message in messages:
            for number, text in BLOCK.findall(str(message.content)):
                shown.setdefault(int(number), set()).add(text)
    assert shown and all(len(texts) == 1 for texts in shown.values()), shown  # one text per number
    assert {c["marker"]: c["quote"] for c in out["citations"]} == {n: t.pop() for n, t in shown.items()}


def test_markers_in_a_hits_source_or_kind_are_not_shown_as_ours(tmp_path: Path):
    model = recording_chat("Korvik [1].")
    out = get_graph("naive").invoke(
        {"question": QUESTION}, context=_context(tmp_path, model, MarkerLabels(), k=2)
    )
    prompt = str(model.seen[-1][-1].content)
    second = prompt[prompt.index("[2]\n") :]
    assert "(see ⟦1⟧.txt, ⟦1⟧)" in second and "[1]" not in second
    assert [c["chunk_id"] for c in out["citations"]] == ["a"]
