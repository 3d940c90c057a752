"""The embedding model's name is stored on the collection it creates; a run with another model is
a one-line ``SetupError`` naming the setting, even when the dimensions agree (issue 29)."""

from __future__ import annotations

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel

from rag_graphs.config.errors import SetupError
from rag_graphs.methods import get_graph
from rag_graphs.store.embeddings import embeddings_identity
from rag_graphs.store.fields import EMBEDDINGS_PROPERTY

QUESTION = "Where was Ilsa Brandt born?"


class OtherModel(DeterministicFakeEmbedding):
    """Another model with the collection's dimension: vectors fit, meanings do not."""


def _silent() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([]))


def test_the_collection_keeps_the_name_of_the_model_that_built_it(loaded, fake_embeddings):
    assert loaded.embeddings_name() == embeddings_identity(fake_embeddings)
    assert embeddings_identity(fake_embeddings).endswith("DeterministicFakeEmbedding:32")
    assert embeddings_identity(" ollama:nomic-embed-text ") == "ollama:nomic-embed-text"


def test_another_model_of_the_same_dimension_is_refused_naming_the_setting(loaded, make_context):
    ctx = make_context(chat_model=_silent(), embeddings=OtherModel(size=32))
    with pytest.raises(SetupError) as error:
        get_graph("naive").invoke({"question": QUESTION}, context=ctx)
    message = str(error.value)
    assert "\n" not in message
    assert "RAG_GRAPHS_EMBEDDINGS" in message and "--embeddings" in message
    assert "DeterministicFakeEmbedding:32" in message and "OtherModel" in message


def test_the_same_model_runs(loaded, make_context):
    ctx = make_context("Ilsa Brandt was born in Korvik [1].", embeddings=DeterministicFakeEmbedding(size=32))
    out = get_graph("naive").invoke({"question": QUESTION}, context=ctx)
    assert out["answer"]


def test_a_collection_from_before_keeps_working_by_dimension_only(loaded, make_context):
    loaded.client.alter_collection_properties(loaded.collection, properties={EMBEDDINGS_PROPERTY: ""})
    assert loaded.embeddings_name() is None
    ctx = make_context("Ilsa Brandt was born in Korvik [1].", embeddings=OtherModel(size=32))
    assert get_graph("naive").invoke({"question": QUESTION}, context=ctx)["answer"]
    ctx = make_context(chat_model=_silent(), embeddings=OtherModel(size=16))
    with pytest.raises(SetupError, match="16-d vectors"):
        get_graph("naive").invoke({"question": QUESTION}, context=ctx)
