"""The LangSmith path: the evaluator's metrics through ``langsmith.evaluate``, against a
local stand-in for the LangSmith API (no network)."""

from __future__ import annotations

import itertools
import uuid
from types import SimpleNamespace

from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from rag_graphs.eval import load_dataset
from rag_graphs.eval.judges import correctness
from rag_graphs.eval.langsmith import compare_in_langsmith, upload_dataset


def test_methods_are_scored_by_langsmith_evaluate_with_the_method_in_metadata(loaded, make_context, standin):
    from langsmith import Client
    from langsmith.schemas import Example

    url, received = standin
    client = Client(api_url=url, api_key="test-key")
    model = GenericFakeChatModel(messages=itertools.cycle([AIMessage(content="Korvik [1].")]))
    ctx = make_context(chat_model=model, k=2)
    gold = {"answer": "Korvik", "answer_aliases": [], "supporting_ids": ["no-such-id"]}
    data = [Example(id=uuid.uuid4(), inputs={"question": "Where was Ilsa Brandt born?"}, outputs=gold)]

    judge = GenericFakeChatModel(messages=itertools.cycle([AIMessage(content='{"correct": true}')]))
    results = compare_in_langsmith(
        data, ["naive"], context=ctx, client=client, upload_results=False, evaluators=[correctness(judge)]
    )
    client.flush()

    (row,) = list(results["naive"])
    scores = {r.key: r.score for r in row["evaluation_results"]["results"]}
    # EM scores the short answer: "Korvik [1]." without its citation marker and period.
    assert scores["exact_match"] == 1.0 and scores["contains"] == 1.0
    assert scores["f1"] == 1.0 and scores["supporting_recall"] == 0.0
    assert scores["llm_calls"] == 1 and scores["retrievals"] == 1
    assert scores["answer_correct"] == 1.0  # a judge reads LangSmith's reference shape too
    traced = b"".join(body for method, path, body in received if path.startswith("/runs"))
    assert b'"method":"naive"' in traced.replace(b" ", b"")  # the experiment's runs name the method


def test_upload_dataset_sends_questions_and_gold(tmp_path):
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "dev.jsonl").write_text(
        '{"id": "a", "question": "Q1?", "answer": "A1", "supporting_ids": ["p1"], "hops": 2}\n'
        '{"id": "b", "question": "Q2?", "answer": "A2", "answer_aliases": ["two"]}\n'
    )
    calls = {}

    class Recorder:
        def create_dataset(self, name, description):
            calls["dataset"] = name
            return SimpleNamespace(id="ds-1")

        def create_examples(self, **kwargs):
            calls["examples"] = kwargs

    upload_dataset(load_dataset(folder), "my-set", limit=1, client=Recorder())
    assert calls["dataset"] == "my-set"
    sent = calls["examples"]
    assert sent["dataset_id"] == "ds-1" and sent["inputs"] == [{"question": "Q1?"}]
    assert sent["outputs"] == [{"answer": "A1", "answer_aliases": [], "supporting_ids": ["p1"]}]
    assert sent["metadata"] == [{"id": "a", "hops": 2, "type": None}]
