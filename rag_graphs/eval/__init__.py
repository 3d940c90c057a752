"""The evaluator: run methods over multi-hop QA sets, score quality and cost, report.

    from rag_graphs.eval import EvalOptions, evaluate, write_report
    run = evaluate("../shared/eval/hotpotqa", ["naive", "ircot"], options=EvalOptions(limit=30))
    write_report(run)

The same from the shell: ``rag-graphs eval --dataset ../shared/eval/hotpotqa -m naive,ircot --limit 30``.
Retrieval alone (R@2, R@5, no answer call), on many more questions:
``rag-graphs eval --dataset ../shared/eval/hotpotqa -m naive --retrieval-only --k 5 --limit 500``.
LLM-as-judge scores beside EM/F1 (``rag_graphs.eval.judges``; any LangSmith or openevals
evaluator function plugs in the same way):
``evaluate(..., options=EvalOptions(evaluators=default_judges(load_chat_model("openai:gpt-4o-mini"))))``.

Sits on top with ``run`` and the commands: may import methods, nodes, the core and ``ingestion``;
nothing below imports it.
"""

from rag_graphs.eval.datasets import Dataset, Example, load_dataset
from rag_graphs.eval.judges import citation_precision, correctness, default_judges, groundedness
from rag_graphs.eval.metrics import (
    answer_contained,
    bootstrap_ci,
    exact_match,
    f1_score,
    normalize_answer,
    recall_at_k,
    supporting_recall,
)
from rag_graphs.eval.options import EvalOptions
from rag_graphs.eval.paired import Comparison, paired_comparison
from rag_graphs.eval.report import common_questions, markdown_table, summarize, write_report
from rag_graphs.eval.rows import RunFolderBusy, read_rows
from rag_graphs.eval.runner import evaluate, run_one

__all__ = [
    "Comparison",
    "Dataset",
    "EvalOptions",
    "Example",
    "RunFolderBusy",
    "answer_contained",
    "bootstrap_ci",
    "citation_precision",
    "common_questions",
    "correctness",
    "default_judges",
    "evaluate",
    "exact_match",
    "f1_score",
    "groundedness",
    "load_dataset",
    "markdown_table",
    "normalize_answer",
    "paired_comparison",
    "read_rows",
    "recall_at_k",
    "run_one",
    "summarize",
    "supporting_recall",
    "write_report",
]
