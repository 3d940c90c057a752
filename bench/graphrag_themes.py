"""GraphRAG global search against RAPTOR and naive search: how many of a corpus's themes reach the
answer's context when the question is global ("What are the main themes of these documents?").

The corpus has known themes: ``--per-dataset`` questions from each of ``DATASETS`` (read in place
under ``../shared/eval``, never copied), each question's supporting passages one theme. Only those
passages are stored, in one Milvus Lite collection (a temporary folder), with the embedded MiniLM
embeddings and spaCy's entity graph (as ingest builds it). Then:

* RAPTOR's tree (``build_tree``) and the community reports (``build_reports``) are written by an
  **extractive fake** model (``Extractive``, no LLM): a summary or report is the first sentence of
  every passage it reads; a map step gives every report one key point (its title and first
  sentence) with the same score. So no method is helped by a model's judgement: the comparison is
  of the structures (top-k passages, a summary tree, entity communities) and of how each fills
  its context;
* each global question runs through ``naive`` (k passages), ``raptor`` (collapsed, k nodes) and
  ``graphrag`` (``graphrag_search="global"``, the default context budget), answers by the same fake;
* a theme is **covered** when one of its passages is in the final context (``documents``), and
  **named** when the title of one of its passages stands in the context's text (a passage, or a
  summary that kept the passage's first sentence, which leads with its title). Counting a
  summary for every leaf under it would credit RAPTOR's root with every theme while its
  extractive text keeps a few; graphrag's context is counted without its key points (passages
  only, each cited through its report), which can only undercount it.

Run (rows go to ``bench/results/graphrag_themes.json``):
    .venv/bin/python bench/graphrag_themes.py                    # 8 questions x 3 datasets, k=8
    .venv/bin/python bench/graphrag_themes.py --per-dataset 4 --k 4
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import time
from pathlib import Path

OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
for name, value in OFFLINE.items():
    os.environ.setdefault(name, value)  # offline, before anything imports transformers

from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval"
RESULTS = ROOT / "bench" / "results"
DATASETS = ["hotpotqa", "musique", "2wikimultihopqa"]
QUESTIONS = [
    "What are the main themes of these documents?",
    "What topics do these files cover?",
    "Give me an overview of the whole collection.",
    "What do these documents have in common?",
]
_FENCED = re.compile(r"<passage>\n(.*?)\n</passage>", re.DOTALL)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def first_sentence(text: str) -> str:
    return _SENTENCE.split(" ".join(text.split()), maxsplit=1)[0][:300]


class Extractive(BaseChatModel):
    """No model: summaries, reports and key points are the first sentences of what a prompt fences."""

    @property
    def _llm_type(self) -> str:
        return "extractive"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        text = "\n".join(str(m.content) for m in messages)
        blocks = _FENCED.findall(text)
        if "Key points, as JSON" in text:  # graphrag's map: one point per report, all scored alike
            points = [
                {"description": first_sentence(b.split("\n\n", 1)[-1]), "score": 50, "reports": [n]}
                for n, b in enumerate(blocks, 1)
            ]
            reply = json.dumps({"points": points})
        elif "write the report of one community" in text:
            material = [first_sentence(b) for b in blocks[1:]]  # blocks[0]: the entity names
            title = blocks[0].split(",")[0] if blocks else "community"
            reply = json.dumps({"title": title, "summary": " ".join(material), "findings": [], "rating": 5})
        elif "summary node of a document tree" in text:
            reply = " ".join(first_sentence(b) for b in blocks)
        else:
            reply = "The documents cover several topics [1]."
        usage = {"input_tokens": len(text) // 4 + 1, "output_tokens": len(reply) // 4 + 1}
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(content=reply, usage_metadata=usage))]
        )


def themes(per_dataset: int) -> tuple[dict[str, set[str]], list[dict]]:
    """Passage id -> the themes (question ids) it supports; the passages, each once."""
    from rag_graphs.eval.datasets import load_dataset

    theme_of: dict[str, set[str]] = {}
    passages: dict[str, dict] = {}
    for name in DATASETS:
        dataset = load_dataset(EVAL / name)
        wanted = [e for e in dataset.examples if e.supporting_ids][:per_dataset]
        for example in wanted:
            for pid in example.supporting_ids:
                theme_of.setdefault(pid, set()).add(f"{name}:{example.id}")
        ids = set(theme_of)
        for passage in dataset.passages():
            if passage["id"] in ids and passage["id"] not in passages:
                passages[passage["id"]] = passage | {"dataset": name}
    return theme_of, list(passages.values())


def store(passages: list[dict], uri: str):
    from rag_graphs.entity_graph.build import build_graph
    from rag_graphs.entity_graph.entities import load_extractor
    from rag_graphs.eval.corpus import passage_documents
    from rag_graphs.eval.datasets import load_dataset
    from rag_graphs.ingestion.community_reports import build_reports
    from rag_graphs.ingestion.raptor import build_tree
    from rag_graphs.llm.structured import invoke_structured
    from rag_graphs.store import load_embeddings, open_index

    index = open_index(uri, "themes", load_embeddings("embedded"))
    datasets = {name: load_dataset(EVAL / name) for name in DATASETS}
    index.add([d for p in passages for d in passage_documents(p, datasets[p["dataset"]])])
    index.flush()
    timings = {}
    for name, build in (
        ("graph", lambda: build_graph(index, load_extractor("spacy"), progress=False)),
        ("raptor", lambda: build_tree(index, Extractive(), progress=False)),
        ("reports", lambda: build_reports(index, Extractive(), ask=invoke_structured, progress=False)),
    ):
        began = time.perf_counter()
        built = build()
        timings[name] = round(time.perf_counter() - began, 1)
        print(f"  {name}: {built}", flush=True)
    return index, timings


def covered(out: dict, theme_of: dict[str, set[str]], titles: dict[str, str]) -> tuple[set[str], set[str]]:
    """Themes with a passage in the context; themes a passage title of which the context names."""
    from rag_graphs.eval.corpus import PASSAGE_FIELD

    direct: set[str] = set()
    for doc in out["documents"]:
        if not doc.metadata.get("level", 0):  # a passage (RAPTOR's leaves are copies of them)
            direct |= theme_of.get(str(doc.metadata.get(PASSAGE_FIELD) or doc.id), set())
    text = "\n".join(d.page_content for d in out["documents"])
    named = {t for pid, title in titles.items() if len(title) >= 3 and title in text for t in theme_of[pid]}
    return direct, direct | named


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-dataset", type=int, default=8, help="questions (themes) per dataset")
    parser.add_argument("--k", type=int, default=8, help="naive's passages and RAPTOR's nodes")
    parser.add_argument(
        "--context-tokens", type=int, default=None, help="graphrag's budget (default: its own)"
    )
    parser.add_argument("--levels", type=int, nargs="+", default=[0, 1], help="graphrag global's levels")
    args = parser.parse_args()

    from rag_graphs.config.context import RagContext
    from rag_graphs.methods import get_graph

    theme_of, passages = themes(args.per_dataset)
    total = len({t for ts in theme_of.values() for t in ts})
    print(f"{len(passages)} passages, {total} themes", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        uri = str(Path(tmp) / "themes.db")
        index, timings = store(passages, uri)
        titles = {p["id"]: str(p.get("title") or "") for p in passages}
        budget = {"graphrag_context_tokens": args.context_tokens} if args.context_tokens else {}
        settings = {
            "naive": {},
            "raptor": {"raptor_mode": "collapsed"},
            **{
                f"graphrag level {n}": {"graphrag_search": "global", "graphrag_level": n} | budget
                for n in args.levels
            },
        }
        for label, extra in settings.items():
            method = label.split()[0]
            ctx = RagContext(
                chat_model=Extractive(),
                embeddings="embedded",
                store_uri=uri,
                collection="themes",
                k=args.k,
                **extra,
            )
            for question in QUESTIONS:
                began = time.perf_counter()
                out = get_graph(method).invoke({"question": question}, context=ctx)
                direct, named = covered(out, theme_of, titles)
                rows.append(
                    {
                        "method": label,
                        "question": question,
                        "themes": total,
                        "covered": len(direct),
                        "named": len(named),
                        "context_items": len(out["documents"]),
                        "context_chars": sum(len(d.page_content) for d in out["documents"]),
                        "llm_calls": out["usage"].get("llm_calls", 0),
                        "seconds": round(time.perf_counter() - began, 2),
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    summary = {"args": vars(args), "passages": len(passages), "themes": total, "build_seconds": timings}
    (RESULTS / "graphrag_themes.json").write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    print(f"\n{len(passages)} passages, {total} themes; build seconds {timings}")
    print("| method | themes: a passage in the context | named in the context | items | chars | LLM calls |")
    print("|---|---|---|---|---|---|")
    for method in settings:
        mine = [r for r in rows if r["method"] == method]

        def mean(key: str, rows: list[dict] = mine) -> float:
            return statistics.mean(r[key] for r in rows)

        print(
            f"| {method} | {mean('covered'):.1f} / {total} | {mean('named'):.1f} / {total} "
            f"| {mean('context_items'):.1f} | {mean('context_chars'):.0f} | {mean('llm_calls'):.1f} |"
        )


if __name__ == "__main__":
    main()
