"""The reader embeds only what can change its answer (issue 51: < 50 ms a question).

With an embedder, the sentence-question similarity is measured only for the sentences of
candidates that could still win once it is added (``reader._with_similarity``), and a sentence
embedded once is not embedded again. The answer must be the one measuring every sentence gives.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_huggingface import HuggingFaceEmbeddings

from rag_graphs.store.local_embeddings import LocalEmbeddings
from rag_graphs.text import reader
from rag_graphs.text.answer_types import answer_type
from rag_graphs.text.reader import best_scored, load_weights, parsed_documents, read, sentence_similarities
from rag_graphs.text.reader_features import candidate_features


def best_candidate(candidates, weights):
    """The candidate the linear model alone scores highest, and its confidence."""
    return best_scored(candidates, np.asarray([c.features for c in candidates]) @ np.asarray(weights.weights))


class Recording(DeterministicFakeEmbedding):
    """The deterministic fake, counting the texts it embeds as passages; its vectors' components
    are made positive, so two cosines with one question differ by at most 1, within the reader's
    ``COSINE_SPREAD`` as MiniLM's are."""

    embedded: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.embedded.extend(texts)
        return [[abs(x) for x in v] for v in super().embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        return [abs(x) for x in super().embed_query(text)]


def doc(title: str, text: str) -> Document:
    return Document(page_content=f"{title}\n{text}", metadata={"title": title}, id=title)


PASSAGES = [
    doc(
        "Korvik Falls",
        "Korvik Falls is a 1999 Norwegian drama film directed by Ilsa Brandt. The film was shot in "
        "Bergen over the winter of 1998. It premiered in Oslo. Critics in Stockholm praised it.",
    ),
    doc(
        "Ilsa Brandt",
        "Ilsa Brandt (born 3 May 1950) is a Danish film director. She was born in Aarhus and studied "
        "in Copenhagen. Brandt has directed twelve feature films. She lives in Malmo.",
    ),
    doc(
        "Blue Harbour",
        "Blue Harbour is a 1987 British comedy film directed by Tomas Lind. It was shot in Dover.",
    ),
]
QUESTIONS = [
    "In which city was the director of Korvik Falls born?",
    "Where was Korvik Falls shot?",
    "Who directed Blue Harbour?",
    "Where did Ilsa Brandt study?",
    "When was Ilsa Brandt born?",
    "What nationality is Ilsa Brandt?",
]


def _measuring_every_sentence(question: str, documents: list[Document], embeddings) -> str:
    """The answer as the reader gave it before: every measured sentence embedded."""
    passages = parsed_documents(documents)
    typed = answer_type(question)
    similarities = sentence_similarities(question, passages, embeddings)
    winner, _ = best_candidate(candidate_features(question, typed, passages, similarities), load_weights())
    return winner.text


def test_only_contenders_are_embedded_and_the_answer_is_the_same():
    for size in (8, 32, 128):  # three unrelated fake models: similarity values differ each time
        embeddings = Recording(size=size)
        for question in QUESTIONS:
            reader._VECTORS.vectors.clear()
            embeddings.embedded.clear()
            before = _measuring_every_sentence(question, PASSAGES, embeddings)
            every = len(embeddings.embedded)
            reader._VECTORS.vectors.clear()
            embeddings.embedded.clear()
            # the reach is exact for the linear stage (the trees then read the same similarities)
            reading = read(question, PASSAGES, embeddings=embeddings, rerank=False)
            assert reading.answer == before, question
            assert len(embeddings.embedded) < every, (question, embeddings.embedded)


def test_a_sentence_embedded_once_is_not_embedded_again():
    embeddings = Recording(size=16)
    reader._VECTORS.vectors.clear()
    embeddings.embedded.clear()
    first = read(QUESTIONS[0], PASSAGES, embeddings=embeddings)
    assert embeddings.embedded
    embeddings.embedded.clear()
    again = read(QUESTIONS[0], PASSAGES, embeddings=embeddings)
    assert embeddings.embedded == [] and again == first
    other = Recording(size=16)  # another model object: its own vectors, never the first one's
    other.embedded.clear()
    read(QUESTIONS[0], PASSAGES, embeddings=other)
    assert other.embedded
    assert np.isfinite(first.confidence)


class Symmetric(HuggingFaceEmbeddings):
    """A sentence-transformers model without query settings (MiniLM's kind), faked: it records
    each model call; its query path must not be taken (the question rides in the batch)."""

    calls: ClassVar[list[list[str]]] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return DeterministicFakeEmbedding(size=16).embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        raise AssertionError(f"a separate query call for {text!r}")


SHARED = [QUESTIONS[0], QUESTIONS[1], QUESTIONS[3]]
"""Questions whose contenders stand in two sentences or more (with the shipped weights)."""
LONE = [QUESTIONS[2], QUESTIONS[4], QUESTIONS[5]]
"""Questions whose contenders all stand in one sentence."""


def test_a_symmetric_model_is_called_once_per_read_with_the_question_in_the_batch():
    model = Symmetric.model_construct(query_encode_kwargs={})
    for question in SHARED:
        reader._VECTORS.vectors.clear()
        Symmetric.calls.clear()
        reading = read(question, PASSAGES, embeddings=model)
        assert not reading.no_evidence or reading.reason
        assert len(Symmetric.calls) == 1 and question in Symmetric.calls[0], Symmetric.calls
        Symmetric.calls.clear()  # the same question again: every vector is kept, no model call
        assert read(question, PASSAGES, embeddings=model) == reading
        assert Symmetric.calls == []


def test_entities_read_from_the_token_arrays_are_spacys_own():
    from rag_graphs.entity_graph.entities import load_spacy
    from rag_graphs.text.candidates import entity_offsets

    texts = [
        *(d.page_content for d in PASSAGES),
        "Ilsa Brandt\nEarly life\nBrandt was born in Korvik, Asterra, on 3 May 1950.",
        "",
        "   ",
        "New York City and Los Angeles had 8,000,000 and 3,900,000 people in 2020.",
    ]
    for parsed in load_spacy().pipe(texts):
        assert entity_offsets(parsed) == [(e.start_char, e.end_char, e.label_) for e in parsed.ents]


def test_the_question_retrieval_embedded_is_not_embedded_again_by_the_reader(monkeypatch):
    """The run's dense search embedded the question as a query (``LocalEmbeddings.embed_query``):
    the reader's call embeds its sentences only, and the reading is the one it gives otherwise."""
    fake = DeterministicFakeEmbedding(size=16)
    calls: list[list[str]] = []

    def documents(self, texts):
        calls.append(list(texts))
        return fake.embed_documents(texts)

    monkeypatch.setattr(HuggingFaceEmbeddings, "embed_documents", documents)
    monkeypatch.setattr(HuggingFaceEmbeddings, "embed_query", lambda self, text: fake.embed_query(text))
    for question in SHARED:
        reader._VECTORS.vectors.clear()
        alone = read(question, PASSAGES, embeddings=LocalEmbeddings.model_construct())
        assert len(calls) == 1 and question in calls[0], calls
        calls.clear()
        reader._VECTORS.vectors.clear()
        model = LocalEmbeddings.model_construct()
        model.embed_query(question)  # retrieval's
        assert read(question, PASSAGES, embeddings=model) == alone
        assert len(calls) == 1 and question not in calls[0] and calls[0], calls
        calls.clear()


def test_only_candidates_within_the_cosine_spread_of_the_best_have_their_sentence_embedded():
    """With the similarity weight 1 and one other feature, sentence scores 2.0, 0.8 and 0.5 before
    it: the gap of 1.2 is within ``COSINE_SPREAD`` (1.3), the gap of 1.5 is not (the bound of
    2 would embed it too)."""
    passages = parsed_documents([doc("Alpha", "Alpha is red. Beta is blue. Gamma is green.")])
    weights = reader.Weights(tuple(1.0 if f in ("similarity", "type") else 0.0 for f in reader.FEATURES), 0.1)
    kind = reader.FEATURES.index("type")

    def candidate(sentence: int, score: float) -> reader.Candidate:
        features = tuple(score if i == kind else 0.0 for i in range(len(reader.FEATURES)))
        return reader.Candidate(f"c{sentence}", "PERSON", f"c{sentence}", 0, sentence, features, None)

    embeddings = Recording(size=8)
    embeddings.embedded.clear()
    reader._VECTORS.vectors.clear()
    scored = reader._with_similarity(
        "Which is red or blue?",
        passages,
        [candidate(0, 2.0), candidate(1, 0.8), candidate(2, 0.5)],
        embeddings,
        weights,
    )
    texts = [s.text for s in passages[0].sentences]
    assert set(embeddings.embedded) == {texts[0], texts[1]}  # the question: its own query call
    assert reader.COSINE_SPREAD == 1.3
    similarity = reader.FEATURES.index("similarity")
    assert scored[2].features[similarity] == 0.0 and scored[0].features[similarity] != 0.0


def test_contenders_in_one_sentence_take_the_lone_cosine_and_call_no_model():
    """The cosine would move every contender alike: the winner is the one measuring every sentence
    gives, and the confidence is the one that sentence's similarity at ``LONE_COSINE`` gives."""
    model = Symmetric.model_construct(query_encode_kwargs={})
    for question in LONE:
        reader._VECTORS.vectors.clear()
        Symmetric.calls.clear()
        reading = read(question, PASSAGES, embeddings=model, rerank=False)  # the linear stage's winner
        assert Symmetric.calls == [], question
        assert reading.answer == _measuring_every_sentence(question, PASSAGES, Recording(size=16))
        passages = parsed_documents(PASSAGES, question)
        plain = candidate_features(question, answer_type(question), passages, {})
        winner, _ = best_candidate(plain, load_weights())
        at = {(winner.doc_index, winner.sentence): reader.LONE_COSINE}
        lone = candidate_features(question, answer_type(question), passages, at)
        assert reading.confidence == best_candidate(lone, load_weights())[1], question
        assert reading.confidence != best_candidate(plain, load_weights())[1], question
