"""The same metrics inside LangSmith, for teams that compare experiments there.

    from rag_graphs.eval.langsmith import compare_in_langsmith, upload_dataset
    upload_dataset(load_dataset("../shared/eval/hotpotqa"), "hotpotqa-dev", limit=50)
    compare_in_langsmith("hotpotqa-dev", ["naive", "ircot", "self_rag"])

Each method becomes one LangSmith experiment (``metadata["method"]`` names
it, with the model specs), scored by the evaluator's own EM / F1 /
contains / supporting-recall / R@k functions and cost counters. Optional: nothing
else in the package imports this module, and the offline evaluator never needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rag_graphs.config.context import RagContext
from rag_graphs.config.tracing import spec_name, trace_config
from rag_graphs.eval import metrics
from rag_graphs.eval.datasets import Dataset
from rag_graphs.eval.judges import Evaluator, run_outputs
from rag_graphs.eval.metrics import answer_contained, exact_match, f1_score, supporting_recall
from rag_graphs.methods import get_graph
from rag_graphs.text.answers import short_answer


def reference_outputs(example: Any) -> dict:
    """A dataset example's gold, in the shape the evaluators read."""
    return {
        "answer": example.answer,
        "answer_aliases": list(example.aliases),
        "supporting_ids": list(example.supporting_ids),
    }


def target(method: str, context: RagContext | None = None) -> Callable[[dict], dict]:
    """An ``evaluate()`` target: ``{"question"}`` in; out the answer, the retrieved ids, usage, and
    what judges read (``rag_graphs.eval.judges.run_outputs``: citations, the cited passages)."""
    graph = get_graph(method)

    def run(inputs: dict) -> dict:
        ctx = context or RagContext()
        out = graph.invoke({"question": inputs["question"]}, context=ctx, config=trace_config(ctx, method))
        return {
            **run_outputs(out),
            "retrieved_ids": [str(d.id) for d in out.get("documents", [])],
            **out.get("usage", {}),
        }

    run.__name__ = f"rag_graphs_{method}"
    return run


def _golds(reference: dict) -> list[str]:
    return [reference["answer"], *reference.get("answer_aliases", [])]


def exact_match_evaluator(outputs: dict, reference_outputs: dict) -> dict:
    return {
        "key": "exact_match",
        "score": exact_match(short_answer(outputs.get("answer", "")), _golds(reference_outputs)),
    }


def f1_evaluator(outputs: dict, reference_outputs: dict) -> dict:
    return {
        "key": "f1",
        "score": f1_score(short_answer(outputs.get("answer", "")), _golds(reference_outputs)),
    }


def contains_evaluator(outputs: dict, reference_outputs: dict) -> dict:
    return {
        "key": "contains",
        "score": answer_contained(outputs.get("answer", ""), _golds(reference_outputs)),
    }


def recall_evaluator(outputs: dict, reference_outputs: dict) -> dict:
    recall = supporting_recall(outputs.get("retrieved_ids", []), reference_outputs.get("supporting_ids", []))
    return {"key": "supporting_recall", "score": recall}


def recall_at_k_evaluator(outputs: dict, reference_outputs: dict) -> list[dict]:
    """R@2 and R@5 of the final context (``retrieved_ids`` is ``documents``, one ranking)."""
    ranked, gold = outputs.get("retrieved_ids", []), reference_outputs.get("supporting_ids", [])
    return [{"key": f"recall_at_{k}", "score": metrics.recall_at_k(ranked, gold, k)} for k in metrics.RANKS]


def cost_evaluator(outputs: dict) -> list[dict]:
    return [{"key": key, "score": outputs.get(key, 0)} for key in ("llm_calls", "retrievals", "hops")]


EVALUATORS: list[Any] = [
    exact_match_evaluator,
    f1_evaluator,
    contains_evaluator,
    recall_evaluator,
    recall_at_k_evaluator,
    cost_evaluator,
]


def upload_dataset(dataset: Dataset, name: str, *, limit: int | None = None, client: Any = None) -> Any:
    """Create LangSmith dataset ``name`` from a local dataset's questions (first ``limit``)."""
    from langsmith import Client

    client = client or Client()
    remote = client.create_dataset(name, description=f"rag-graphs: {dataset.name} ({dataset.questions_path})")
    examples = dataset.select(limit=limit)
    client.create_examples(
        dataset_id=remote.id,
        inputs=[{"question": e.question} for e in examples],
        outputs=[reference_outputs(e) for e in examples],
        metadata=[{"id": e.id, "hops": e.hops, "type": e.type} for e in examples],
    )
    return remote


def compare_in_langsmith(
    data: Any,
    methods: Iterable[str],
    *,
    context: RagContext | None = None,
    evaluators: Iterable[Evaluator] = (),
    **evaluate_kwargs: Any,
) -> dict[str, Any]:
    """Run ``langsmith.evaluate`` once per method; return method -> experiment results.

    ``data`` is a LangSmith dataset name or any data ``evaluate`` accepts;
    ``evaluate_kwargs`` pass through (``client=``, ``max_concurrency=``,
    ``upload_results=False`` to score locally). ``evaluators`` run beside the built-in ones:
    ``rag_graphs.eval.judges.default_judges(model)``, openevals' or your own.
    """
    from langsmith import evaluate

    ctx = context or RagContext()
    results = {}
    for method in methods:
        results[method] = evaluate(
            target(method, ctx),
            data=data,
            evaluators=[*EVALUATORS, *evaluators],
            experiment_prefix=f"rag-graphs-{method}",
            metadata={
                "method": method,
                "chat_model": spec_name(ctx.chat_model),
                "embeddings": spec_name(ctx.embeddings),
                "k": ctx.k,
                "search_mode": ctx.search_mode,
            },
            **evaluate_kwargs,
        )
    return results
