from __future__ import annotations

import pytest

from rag_graphs.llm.models import load_chat_model
from rag_graphs.store import load_embeddings
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


@pytest.mark.parametrize(
    ("spec", "base", "capped"),
    [
        ("openai:smollm2", "http://127.0.0.1:8000/v1", True),  # an OpenAI-compatible server
        ("openai:gpt-4.1-mini", "", False),  # OpenAI itself: max_completion_tokens only
        ("openai:gpt-4.1-mini", "https://api.openai.com/v1", False),
    ],
)
def test_openai_compatible_servers_get_the_length_cap_as_max_tokens(monkeypatch, spec, base, capped):
    """llama.cpp's server ignores ``max_completion_tokens`` (what langchain-openai sends): the cap
    must also travel as ``max_tokens`` in the body, or a reply runs to the end of the context."""
    pytest.importorskip("langchain_openai")
    from langchain_core.messages import HumanMessage

    from rag_graphs.llm.models import _load

    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    if base:
        monkeypatch.setenv("OPENAI_BASE_URL", base)
    else:
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    _load.cache_clear()
    try:
        payload = _load(spec, 7)._get_request_payload([HumanMessage("hi")])
    finally:
        _load.cache_clear()
    assert payload["max_completion_tokens"] == 7
    assert payload.get("extra_body", {}).get("max_tokens") == (7 if capped else None)
