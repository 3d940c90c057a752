"""A graph run without a ``RagContext`` is refused unless the caller opts in to environment
defaults (``RAG_GRAPHS_ENV_DEFAULTS=1``; ``langgraph.json`` does for the served graphs)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from rag_graphs.config.errors import SetupError
from rag_graphs.config.runtime import ENV_DEFAULTS
from rag_graphs.methods import get_graph

QUESTION = "Where was Ilsa Brandt born?"
ROOT = Path(__file__).resolve().parents[2]


def _refused(error: pytest.ExceptionInfo) -> None:
    message = str(error.value)
    assert "\n" not in message and "without a context" in message
    assert "context=RagContext(" in message and f"{ENV_DEFAULTS}=1" in message


@pytest.mark.parametrize("method", ["naive", "iterative"])
def test_a_run_without_context_is_refused_naming_the_fix(method):
    with pytest.raises(TypeError) as error:
        get_graph(method).invoke({"question": QUESTION})
    _refused(error)
    with pytest.raises(TypeError) as error:
        asyncio.run(get_graph(method).ainvoke({"question": QUESTION}))
    _refused(error)


def test_opting_in_runs_on_the_environment(monkeypatch, tmp_path):
    """With the opt-in, the run takes its settings from the environment: here a store that does
    not exist, which the run's own setup check then names."""
    missing = tmp_path / "env-store" / "milvus.db"
    monkeypatch.setenv(ENV_DEFAULTS, "1")
    monkeypatch.setenv("RAG_GRAPHS_STORE_URI", str(missing))
    monkeypatch.setenv("RAG_GRAPHS_CHAT_MODEL", "openai:gpt-4.1-mini")
    with pytest.raises(SetupError, match="does not exist") as error:
        get_graph("naive").invoke({"question": QUESTION})
    assert str(missing) in str(error.value) and not missing.exists()


def test_an_explicit_context_needs_no_opt_in(loaded, make_context):
    ctx = make_context("Ilsa Brandt was born in Korvik [1].")
    assert get_graph("naive").invoke({"question": QUESTION}, context=ctx)["answer"]


def test_langgraph_json_opts_its_served_graphs_in():
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert config["env"][ENV_DEFAULTS] == "1"
