"""The output contract every graph keeps, checked the same way wherever a real model answers.

A real model's words differ by CPU (llama.cpp built for the local instruction set gives other
greedy tokens), by load and by version, so tests that run one never ask which branch its words
took (did IterDRAG follow up, did Self-RAG retrieve, which node answered last). They ask what
holds on every branch: an answer, citations that resolve to stored chunks and quote them, the
budgets kept, ``outcome`` and ``stop_reason`` that agree with each other, a well-formed chain.
Each branch is pinned down with scripted fake models in the unit tests instead.
"""

from __future__ import annotations

import typing

from langchain_core.documents import Document

from rag_graphs.config.context import RagContext
from rag_graphs.ingestion.raptor import tree_collection
from rag_graphs.nodes.reading import reader_of
from rag_graphs.search.retrieval import embeddings_for
from rag_graphs.state import Outcome, Step
from rag_graphs.store import open_index

OUTCOMES = set(typing.get_args(Outcome))
STEP_KINDS = set(typing.get_args(typing.get_type_hints(Step)["kind"]))
CONTRACT_KEYS = {"answer", "citations", "documents", "steps", "usage", "stop_reason", "outcome"}


def said_by(quote: str, content: str) -> bool:
    """True when the quote's words stand in ``content`` in the same order: the chunk's opening,
    or an extract of it (CRAG's knowledge strips, compression). The quote is cut at a length, so
    its last word may be the start of one."""
    words, rest = quote.split(), iter(content.split())
    for i, word in enumerate(words):
        last = i == len(words) - 1
        if not any(w == word or (last and w.startswith(word)) for w in rest):
            return False
    return True


def hop_budget(method: str, ctx: RagContext) -> int:
    """The most retrieval rounds ``method`` may run under ``ctx`` (its loop's budget)."""
    budgets = {
        "react": ctx.max_steps,
        "iterdrag": ctx.iterdrag_iterations + 1,  # the first retrieval, then one per follow-up
        "fixed_step": ctx.fixed_hops,
    }
    return budgets.get(method, ctx.max_hops)


def cited_chunks(out: dict, *, method: str, ctx: RagContext) -> list[Document]:
    """The stored chunks ``out`` cites, read back from the collection the run searched (RAPTOR:
    its tree)."""
    if not out["citations"]:
        return []
    collection = tree_collection(ctx.collection) if method == "raptor" else ctx.collection
    index = open_index(ctx.store_uri, collection, embeddings_for(ctx))
    return index.get([c["chunk_id"] for c in out["citations"]])


def check_contract(out: dict, *, method: str, ctx: RagContext) -> None:
    """Assert that ``out`` keeps the output contract, whatever branch the model's words took."""
    assert CONTRACT_KEYS <= set(out), sorted(CONTRACT_KEYS - set(out))
    assert "error" not in out, out.get("error")
    assert isinstance(out["answer"], str) and out["answer"].strip()

    # Citations resolve to stored chunks and quote them; they cite what the run gathered.
    by_id = {str(d.id): d for d in cited_chunks(out, method=method, ctx=ctx)}
    gathered = {str(d.id) for d in out["documents"]}
    for cite in out["citations"]:
        assert cite["chunk_id"] in by_id, cite
        assert said_by(cite["quote"], by_id[cite["chunk_id"]].page_content), cite
        assert cite["chunk_id"] in gathered, (cite["chunk_id"], sorted(gathered))
        assert cite["marker"] >= 1 and isinstance(cite["explicit"], bool)
    if out["documents"]:
        assert out["citations"], "an answer from passages cites them (inferred when no marker)"
    assert len({d.id for d in out["documents"]}) == len(out["documents"]), "documents repeat a chunk"

    # Budgets: retrieval rounds within the method's loop budget; every round searched something.
    usage = out["usage"]
    if reader_of(ctx) == "generate":  # the extract reader answers without a model call (naive: none)
        assert usage.get("llm_calls", 0) >= 1 and usage.get("prompt_tokens", 0) > 0, usage
    hops = usage.get("hops", 0)
    assert hops <= hop_budget(method, ctx), (hops, hop_budget(method, ctx))
    assert usage.get("retrievals", 0) >= hops, usage
    if out["documents"]:
        assert usage.get("retrievals", 0) >= 1, usage

    # How the run ended: outcome and stop_reason agree.
    assert out["outcome"] in OUTCOMES, out["outcome"]
    reason = out["stop_reason"]
    assert isinstance(reason, str) and reason.strip()
    assert (out["outcome"] == "budget_exhausted") == ("budget reached" in reason), (out["outcome"], reason)
    if out["outcome"] == "answered" and usage.get("retrievals", 0):
        assert out["documents"], "answered after searching, yet from no passage"

    # The chain: well-formed steps in order, no error, an answer written by some node.
    steps = out["steps"]
    assert steps, "no reasoning chain"
    for st in steps:
        assert isinstance(st.get("node"), str) and st["node"], st
        assert st.get("kind") in STEP_KINDS, st
        assert all(isinstance(i, str) for i in st.get("doc_ids", [])), st
    kinds = [st["kind"] for st in steps]
    assert "error" not in kinds, steps
    # The final answer is a generate step, or a decide step where a loop answers as it stops
    # (IterDRAG's "So the final answer is:"): which one is the model's branch, not the contract.
    assert {"generate", "decide"} & set(kinds), kinds
    if usage.get("retrievals", 0):
        assert "retrieve" in kinds, kinds
