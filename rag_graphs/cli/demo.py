"""What ``rag-graphs demo`` shows: every method on a multi-hop question, and what it did.

The answer to the demo question is at the end of a chain of four passages in four files
(``CHAIN``): the institute's page names its founder, her biography names her home town, the
town's notes name its province, the provinces table names the capital. On the embedded default
the answer is read out of the retrieved passages by the extract reader (``RagContext.reader``),
with the sentence it stands on; the methods differ in what they *retrieve*: which of the chain's
passages each one reached, with which queries. A hop counts as reached when a retrieved passage
of its file says it (``Hop.fact``): a file is several chunks, and counting files said 17 of 19
methods had the two-hop chain where 4 held the sentence that answers it. A two-hop question over
the same corpus (``TWO_HOP``: the institute's founder, then her birthplace) follows, and the demo
says so when no method answered the four-hop one. This module holds that reading of a run and
the step banner; the ``demo`` command in ``rag_graphs.cli`` drives the steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from rag_graphs.catalog import required
from rag_graphs.eval.metrics import answer_contained
from rag_graphs.support.terminal import safe
from rag_graphs.text.answers import scaffolding, short_answer

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from rag_graphs.ingestion.raptor import RaptorReport
    from rag_graphs.store import ChunkIndex

QUESTION = "What is the capital of the province where the founder of the Velmora Institute was born?"
GOLD = "Lunmar"


@dataclass(frozen=True)
class Hop:
    """One link of a demo question's chain: the file holding it and words its passage says."""

    file: str
    fact: str

    def said_by(self, doc: Any) -> bool:
        """True when ``doc`` is a passage of this hop's file that says its fact."""
        text = " ".join(str(doc.page_content).split()).lower()
        return Path(str(doc.metadata.get("source", ""))).name == self.file and self.fact.lower() in text


CHAIN = (
    Hop("velmora_institute.md", "by the engineer Ilsa Brandt"),
    Hop("ilsa_brandt.html", "born in Korvik"),
    Hop("korvik.txt", "province of Asterra"),
    Hop("provinces.csv", "Lunmar"),
)
"""The passages the answer is chained through, in hop order."""


@dataclass(frozen=True)
class DemoQuestion:
    """A demo question, its gold answer and the passages its answer is chained through, in hop order."""

    text: str
    gold: str
    chain: tuple[Hop, ...]


FOUR_HOP = DemoQuestion(QUESTION, GOLD, CHAIN)
TWO_HOP = DemoQuestion(
    "In which town was the founder of the Velmora Institute born?",
    "Korvik",
    CHAIN[:2],
)
"""The two-hop question: the institute's page names its founder, her biography her birthplace."""

ANSWER_TOKENS = 128
"""The demo's budget per model reply (answers and RAPTOR summaries): a short answer and two
sentences. The 256 default doubles the slowest calls, the RAPTOR build most of all."""

# What each step should take on an idle 2-core machine after install, shown beside each step so
# a newcomer knows what to wait for: the last uncontended demo (fresh clone, 2026-11-28, nothing
# else running: ingest 27 s, reports 62 s for 4 calls, tree 18 s, the questions 222 s and 182 s,
# IterDRAG's SmolLM2 follow-ups 75 s of each); on a busy machine every step takes several times longer.
STEP_ESTIMATES = {
    "ingest": "30 s; seconds when already ingested",
    "raptor": "20 s the first time; re-runs resume",
    "communities": "60 s the first time (one call per community); re-runs resume",
    "methods": "220 s",
    "two_hop": "180 s",
}

SMALL_MODEL_NOTE = (
    "[bold]Reading this.[/] The first answer needs four files chained "
    f"({' -> '.join(h.file for h in CHAIN)}). Naive RAG searches once with the question's words; multi-hop "
    "methods search again with what they found. On the embedded default the answers are read "
    "out of the retrieved passages by the extract reader (RAG_GRAPHS_READER=extract: no model "
    "call; the short answer, then the sentence it stands on), because SmolLM2-135M (a smoke-test "
    "model, offline, in-process) rarely composes a right answer even from the right passages; "
    "SmolLM2 still writes the multi-hop methods' follow-up queries and decisions, and writes "
    "weak ones. RAG_GRAPHS_READER=generate shows SmolLM2's own answers.\n"
    "[bold]For a real model[/], set RAG_GRAPHS_CHAT_MODEL, e.g. an OpenAI-compatible server "
    "(vLLM, llama.cpp server, LM Studio):\n"
    "  export RAG_GRAPHS_CHAT_MODEL=openai:<model> OPENAI_BASE_URL=http://127.0.0.1:8000/v1 "
    "OPENAI_API_KEY=<key or any string>\n"
    "or a local Ollama model: RAG_GRAPHS_CHAT_MODEL=ollama:qwen2.5:7b-instruct (pip install "
    "'rag-graphs\\[ollama]'); then run `rag-graphs demo` again (ingest and the RAPTOR tree are reused). "
    "The OpenAI-compatible path is tested for real in tests/server (one method per way a method "
    "calls the model, through `python -m llama_cpp.server ... --chat_format chatml-function-calling`); "
    "README, 'Real models', "
    "has the exact commands."
)


def build_raptor_tree(index: Callable[[], ChunkIndex], chat: Callable[[], BaseChatModel]) -> RaptorReport:
    """The demo's RAPTOR tree (three levels at most), in ``_build_over``'s ``build(index, chat)`` form."""
    from rag_graphs.ingestion.raptor import build_tree

    return build_tree(index(), chat(), max_levels=3)


def build_entity_graph(index: Callable[[], ChunkIndex], chat: Callable[[], BaseChatModel]) -> Any:
    """The demo's entity graph (spaCy NER, offline), in ``_build_over``'s form. Ingest builds it
    for a new collection; this completes one a store ingested without it (graph search, the
    ``hipporag`` method's and ``search_mode="auto"``'s, needs it). Resumes; a no-op once built."""
    from rag_graphs.entity_graph.build import build_graph
    from rag_graphs.entity_graph.entities import load_extractor

    return build_graph(index(), load_extractor("spacy"), progress=False)


def build_community_reports(index: Callable[[], ChunkIndex], chat: Callable[[], BaseChatModel]) -> Any:
    """The demo's GraphRAG community reports (the ``graphrag`` method reads them), in
    ``_build_over``'s form. Resumes; a no-op once built."""
    from rag_graphs.ingestion.community_reports import build_reports

    return build_reports(index(), chat(), progress=False)


def build_sentences(index: Callable[[], ChunkIndex], chat: Callable[[], BaseChatModel]) -> Any:
    """Sentence rows for small-to-big search, in ``_build_over``'s form (no method needs them yet)."""
    from rag_graphs.store.sentences import build_sentences as build

    return build(index())


DERIVED_STEPS: dict[str, tuple[str, str, Callable[..., Any]]] = {
    "entity_graph": ("entity graph", "seconds; ingest built it", build_entity_graph),
    "sentences": ("sentence rows", "seconds", build_sentences),
    "reports": ("GraphRAG community reports", STEP_ESTIMATES["communities"], build_community_reports),
    "raptor_tree": ("RAPTOR summary tree", STEP_ESTIMATES["raptor"], build_raptor_tree),
}
"""Derived structure (``catalog.STRUCTURES``) -> the demo's step that builds it: title, estimate, build."""


def derived_steps(methods: Iterable[str]) -> list[tuple[str, str, Callable[..., Any]]]:
    """The build steps the demo runs for what ``methods`` declare they need (``catalog.REQUIRES``),
    in build order; the entity graph is the ingest step's (graph search, every method's default)."""
    return [DERIVED_STEPS[s] for s in required(methods) if s != "entity_graph"]


GLOBAL_QUESTION = "What do these documents have in common?"
"""The demo's global question, for graphrag's global search (map-reduce over community reports)."""


def global_lines(result: dict[str, Any], seconds: float) -> list[str]:
    """What graphrag's global search did on ``GLOBAL_QUESTION`` (rich markup): the key points the
    map step scored, the files the answer cites through the reports, the answer."""
    notes = [s for s in result.get("steps", []) if s.get("node") == "map_reports"]
    cited = sorted({Path(str(c.get("source", ""))).name for c in result.get("citations", [])})
    answer = short_answer(str(result.get("answer", "")))
    calls = int(result.get("usage", {}).get("llm_calls", 0))
    return [
        f"[bold cyan]graphrag (global)[/]  {len(notes)} map calls · {calls} LLM calls · "
        f"{seconds:.0f} s · {result.get('outcome')}",
        *(f"   map: {safe(str(s.get('text', '')))}" for s in notes[:4]),
        f"   cited files: {safe(', '.join(cited)) or '[dim](none)[/]'}",
        f"   answer: {safe(answer if len(answer) <= 90 else answer[:89] + '…')}",
        *(
            [
                "   [dim]no key point came out of the map step, so the answer has no passage to cite: "
                "SmolLM2-135M rarely scores one; a real chat model does[/]"
            ]
            if not result.get("documents")
            else []
        ),
    ]


def search_banner(mode: str) -> str:
    """The demo's first line: which search every method's retrieve step runs."""
    if mode == "auto":
        return (
            "Every method below searches with graph search: ingest builds the collection's entity "
            "graph (spaCy NER, offline) and search_mode=auto walks it (Personalized PageRank under "
            "hybrid search's first hits). RAG_GRAPHS_SEARCH_MODE=hybrid compares without it."
        )
    return f"Every method below searches with search_mode={mode} (RAG_GRAPHS_SEARCH_MODE)."


def reader_banner(ctx: Any) -> str:
    """Which reader writes the answers (``RagContext.reader``, ``auto`` resolved), and how."""
    from rag_graphs.nodes.reading import reader_of

    if reader_of(ctx) == "extract":
        return (
            f"answers: the extract reader (reader={ctx.reader}): a short answer read out of the "
            "retrieved passages with the sentence it stands on, no model call "
            "(RAG_GRAPHS_READER=generate: SmolLM2 writes them)"
        )
    return (
        f"answers: the chat model writes them (reader={ctx.reader}; RAG_GRAPHS_READER=extract reads them out)"
    )


def search_used(ctx: Any) -> str:
    """The search the methods' retrieve step resolved to on the demo's collection, and why."""
    from rag_graphs.search.retrieval import search_plan

    return search_plan(ctx).why


@dataclass(frozen=True)
class MethodRow:
    """What one method did on the demo question."""

    method: str
    queries: list[str]
    chain: list[bool]  # one per hop: did a retrieved passage of its file say it?
    gold: bool
    clean: bool  # the answer carries no prompt scaffolding
    llm_calls: int
    seconds: float
    answer: str
    evidence: str = ""  # the sentence the answer stands on and its file (explicit citations only)
    files: tuple[str, ...] = tuple(h.file for h in CHAIN)  # the hops' files, in hop order
    found: bool = False
    """The gold is written in a retrieved passage, so a reader could read it out: this says
    whether a wrong answer was the search's miss or the reader's."""


def issued_queries(result: dict[str, Any]) -> list[str]:
    """The search queries a run issued, in order, each once."""
    searched = [s for s in result.get("steps", []) if s.get("kind") == "retrieve" and s.get("query")]
    return list(dict.fromkeys(str(s["query"]) for s in searched))


def evidence_of(result: dict[str, Any]) -> str:
    """The passage the answer stands on, as ``quote (file)``: of the explicit citations, the first
    whose quote holds the short answer, else the last (the extract reader cites its chain hop by
    hop, the answer's sentence last; its quote is that sentence); "" when none is explicit."""
    explicit = [c for c in result.get("citations", []) if c.get("explicit")]
    if not explicit:
        return ""
    short = short_answer(str(result.get("answer", ""))).lower()
    holding = [c for c in explicit if short and short in " ".join(str(c.get("quote", "")).split()).lower()]
    cited = (holding or explicit[-1:])[0]
    quote = " ".join(str(cited.get("quote", "")).split())
    return f"{quote} ({Path(str(cited.get('source', ''))).name})"


def method_row(
    method: str, result: dict[str, Any], seconds: float, question: DemoQuestion = FOUR_HOP
) -> MethodRow:
    """Read one finished run of ``method`` on ``question`` (the four-hop one by default). "Gold
    in answer" reads the short answer, the line the evaluator scores: the evidence sentences
    after it may name the gold without the answer being it."""
    answer = str(result.get("answer", ""))
    documents = result.get("documents", [])
    return MethodRow(
        method=method,
        queries=issued_queries(result),
        chain=[any(hop.said_by(d) for d in documents) for hop in question.chain],
        gold=bool(answer_contained(short_answer(answer), [question.gold])),
        clean=scaffolding(answer) is None,
        llm_calls=int(result.get("usage", {}).get("llm_calls", 0)),
        seconds=seconds,
        answer=short_answer(answer),
        evidence=evidence_of(result),
        files=tuple(hop.file for hop in question.chain),
        found=any(answer_contained(d.page_content, [question.gold]) for d in result.get("documents", [])),
    )


def method_lines(row: MethodRow) -> list[str]:
    """One method's block (rich markup): the chain passages it reached (by file), the gold, its queries,
    its answer.

    Lines, not a table: the queries are the interesting part and a table squeezes them out
    on an 80-column terminal.
    """
    marks = ("[green]✓[/]" if hit else "[red]✗[/]" for hit in row.chain)
    files = "  ".join(f"{name} {mark}" for name, mark in zip(row.files, marks, strict=True))
    gold = "[green]gold in answer[/]" if row.gold else "gold not in answer"
    gold += " (in a retrieved passage)" if row.found else " (in no retrieved passage)"
    lines = [
        f"[bold cyan]{row.method}[/]  {sum(row.chain)}/{len(row.files)} chain passages · {gold} · "
        f"{row.llm_calls} LLM calls · {row.seconds:.0f} s",
        f"   retrieved: {files}",
    ]
    flat = [" ".join(q.split()) for q in row.queries]  # HyDE searches with a multi-line passage
    queries = [safe(q if len(q) <= 90 else q[:89] + "…") for q in flat]
    lines += [f"   searched: {q}" for q in queries[:4]] or ["   searched: [dim](nothing)[/]"]
    if len(queries) > 4:
        lines.append(f"   [dim]… and {len(queries) - 4} more searches[/]")
    answer = row.answer if len(row.answer) <= 90 else row.answer[:89] + "…"
    lines.append(f"   short answer: {safe(answer)}")
    if row.evidence:
        evidence = row.evidence if len(row.evidence) <= 110 else row.evidence[:109] + "…"
        lines.append(f"   evidence: {safe(evidence)}")
    return lines


def summary_line(rows: list[MethodRow], question: DemoQuestion = FOUR_HOP) -> str:
    """How far down the chain the methods got, and how many answers hold the gold."""
    deepest = max(rows, key=lambda r: (sum(r.chain), r.gold), default=None)
    reached = sum(all(r.chain) for r in rows)
    dirty = [r.method for r in rows if not r.clean]
    hops = len(question.chain)
    return (
        f"{reached} of {len(rows)} methods retrieved all {hops} chain passages; "
        f"{sum(r.gold for r in rows)} answers contain {question.gold!r} "
        f"({sum(r.found for r in rows)} methods retrieved a passage that holds it); "
        + (f"best retrieval: {deepest.method} ({sum(deepest.chain)}/{hops} passages). " if deepest else "")
        + (f"Scaffolding left in: {', '.join(dirty)}." if dirty else "No answer carries prompt scaffolding.")
    )


def reach_note(rows: list[MethodRow], question: DemoQuestion = FOUR_HOP) -> str:
    """What the answers say about the question's reach: said plainly when no method answered it
    (the two-hop question follows), else which methods did and how many of them had its chain."""
    right = [r for r in rows if r.gold]
    if not right:
        return (
            f"[bold]No method answered {question.gold!r}[/]: this {len(question.chain)}-hop question "
            "is out of reach for every method on the embedded default (the chain passages each one "
            "retrieved are above). The two-hop question below is the one to judge the answers by."
        )
    whole = [r for r in right if all(r.chain)]
    return (
        f"Answered {question.gold!r}: {', '.join(r.method for r in right)} "
        f"({len(whole)} of them retrieved the whole chain)."
    )


class Steps:
    """Numbered step banners with the measured estimate, and the time each step took."""

    def __init__(self, console: Console, total: int) -> None:
        self.console, self.total, self.number = console, total, 0
        self.started = time.monotonic()

    @contextmanager
    def step(self, title: str, estimate: str) -> Iterator[None]:
        self.number += 1
        self.console.rule(f"[bold]step {self.number}/{self.total}: {title}[/] [dim](about {estimate})[/]")
        began = time.monotonic()
        yield
        self.console.print(f"[dim]step {self.number} done in {time.monotonic() - began:.0f} s[/]")

    def elapsed(self) -> float:
        return time.monotonic() - self.started
