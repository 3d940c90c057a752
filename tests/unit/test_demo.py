"""The demo's reading of a run: queries issued, chain files reached, gold in the answer."""

from __future__ import annotations

from langchain_core.documents import Document

from rag_graphs.cli.demo import CHAIN, GOLD, method_lines, method_row, summary_line


def _result(answer: str, sources: list[str], queries: list[str]) -> dict:
    return {
        "answer": answer,
        "documents": [
            Document(page_content="x", id=f"c{i}", metadata={"source": f"/corpus/{s}"})
            for i, s in enumerate(sources)
        ],
        "steps": [
            *({"kind": "retrieve", "query": q, "doc_ids": []} for q in queries),
            {"kind": "generate", "text": answer},
        ],
        "usage": {"llm_calls": 3},
    }


def test_a_run_is_read_for_chain_files_queries_and_gold():
    result = _result(
        f"{GOLD}\n\nThe capital of Asterra is {GOLD} [2].",
        ["velmora_institute.md", "provinces.csv", "halden_foundation.md"],
        ["founder of the Velmora Institute", "Ilsa Brandt\nbirthplace", "founder of the Velmora Institute"],
    )
    row = method_row("ircot", result, seconds=4.2)
    assert row.chain == [True, False, False, True]
    assert row.queries == ["founder of the Velmora Institute", "Ilsa Brandt\nbirthplace"]  # each once
    assert row.gold and row.clean and row.answer == GOLD and row.llm_calls == 3
    text = "\n".join(method_lines(row))
    assert "2/4 chain files" in text and "searched: Ilsa Brandt birthplace" in text
    assert all(name in text for name in CHAIN)


def test_the_summary_names_the_best_retrieval_and_any_scaffolding():
    deep = method_row("planned", _result("Korvik", list(CHAIN), ["q"]), 1.0)
    shallow = method_row("naive", _result("Lunmar </passage> Question: x", CHAIN[:1], []), 1.0)
    line = summary_line([shallow, deep])
    assert "1 of 2 methods retrieved all four chain files" in line
    assert "best retrieval: planned (4/4 files)" in line
    assert "Scaffolding left in: naive" in line
    assert "searched: [dim](nothing)" in "\n".join(method_lines(shallow))
