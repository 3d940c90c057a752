from __future__ import annotations

import pytest

from rag_graphs.ingestion import load_embeddings
from rag_graphs.llm.models import load_chat_model
from tests.conftest import fake_chat


def test_model_instances_pass_through():
    model = fake_chat("hi")
    assert load_chat_model(model) is model


@pytest.mark.parametrize("spec", ["gpt-4", "nonsense"])
def test_malformed_chat_spec_explains_the_format(spec):
    with pytest.raises(ValueError, match="provider"):
        load_chat_model(spec)


def test_missing_local_model_directory_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        load_chat_model(f"hf:{tmp_path}/nowhere")
    with pytest.raises(FileNotFoundError, match="nowhere"):
        load_embeddings(f"hf:{tmp_path}/nowhere")


def test_malformed_embedding_spec_explains_the_format():
    with pytest.raises(ValueError, match="embedded"):
        load_embeddings("minilm")
