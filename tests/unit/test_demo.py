"""The demo's reading of a run: queries issued, chain passages reached, gold in the answer."""

from __future__ import annotations

from langchain_core.documents import Document

from rag_graphs.cli.demo import CHAIN, GOLD, TWO_HOP, method_lines, method_row, reach_note, summary_line

FILES = [hop.file for hop in CHAIN]
FACTS = {hop.file: f"A passage that says: {hop.fact}." for hop in CHAIN}


def _result(answer: str, sources: list[str], queries: list[str]) -> dict:
    """A run that retrieved one passage of each of ``sources``: a chain file's passage says its hop."""
    return {
        "answer": answer,
        "documents": [
            Document(page_content=FACTS.get(s, "x"), id=f"c{i}", metadata={"source": f"/corpus/{s}"})
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
    assert row.chain == [True, False, False, True] and row.found  # the CSV's passage says "Lunmar"
    assert row.queries == ["founder of the Velmora Institute", "Ilsa Brandt\nbirthplace"]  # each once
    assert row.gold and row.clean and row.answer == GOLD and row.llm_calls == 3
    text = "\n".join(method_lines(row))
    assert "2/4 chain passages" in text and "searched: Ilsa Brandt birthplace" in text
    assert all(name in text for name in FILES)


def test_the_summary_names_the_best_retrieval_and_any_scaffolding():
    deep = method_row("planned", _result("Korvik", FILES, ["q"]), 1.0)
    shallow = method_row("naive", _result("Lunmar </passage> Question: x", FILES[:1], []), 1.0)
    line = summary_line([shallow, deep])
    assert "1 of 2 methods retrieved all 4 chain passages" in line
    assert "best retrieval: planned (4/4 passages)" in line
    assert "Scaffolding left in: naive" in line
    assert "searched: [dim](nothing)" in "\n".join(method_lines(shallow))


def test_the_evidence_sentence_is_shown_and_gold_reads_the_short_answer():
    result = _result("Korvik\nBrandt was born in Korvik, near Lunmar. [2]", ["ilsa_brandt.html"], ["q"])
    result["citations"] = [
        {"explicit": False, "quote": "not this", "source": "/corpus/velmora_institute.md"},
        {
            "explicit": True,
            "quote": "Brandt was born in\nKorvik, near Lunmar.",
            "source": "/corpus/ilsa_brandt.html",
        },
    ]
    row = method_row("naive", result, 1.0)
    assert row.evidence == "Brandt was born in Korvik, near Lunmar. (ilsa_brandt.html)"
    assert not row.gold  # the gold is in the evidence line, not in the answer the evaluator scores
    assert "   evidence: Brandt was born in Korvik, near Lunmar. (ilsa_brandt.html)" in method_lines(row)
    assert all(
        not line.startswith("   evidence")
        for line in method_lines(method_row("naive", _result("x", [], []), 1))
    )


def test_a_passage_holding_the_gold_tells_a_readers_miss_from_a_searchs():
    """A chain file can be retrieved without its chunk that holds the answer (the demo's two-hop
    question at k=4): the row says whether any retrieved passage holds the gold."""
    missed = _result("Brandt", ["velmora_institute.md", "ilsa_brandt.html"], [])
    missed["documents"][1].page_content = "Ilsa Brandt was an engineer."
    held = _result("Brandt", ["velmora_institute.md", "ilsa_brandt.html"], [])
    held["documents"][1].page_content = "Early life. Brandt was born in Korvik."
    rows = [method_row(m, r, 1.0, TWO_HOP) for m, r in (("naive", missed), ("hyde", held))]
    assert [r.found for r in rows] == [False, True] and not any(r.gold for r in rows)
    assert "(in no retrieved passage)" in method_lines(rows[0])[0]
    assert "(in a retrieved passage)" in method_lines(rows[1])[0]
    assert "(1 methods retrieved a passage that holds it)" in summary_line(rows, TWO_HOP)


def test_a_chain_file_counts_only_when_its_passage_that_says_the_hop_was_retrieved():
    """Counting files said 17 of 19 methods had the two-hop chain on the demo, where 4 held the
    sentence that answers it: the biography is several chunks, and most methods had another."""
    other = _result("Brandt", ["velmora_institute.md", "ilsa_brandt.html"], [])
    other["documents"][1].page_content = "Ilsa Brandt\n\nShe studied naval engineering in Dunmere."
    row = method_row("naive", other, 1.0, TWO_HOP)
    assert row.chain == [True, False]
    assert "1/2 chain passages" in method_lines(row)[0] and "ilsa_brandt.html [red]✗" in method_lines(row)[1]
    whole = method_row(
        "hyde", _result("Brandt", ["velmora_institute.md", "ilsa_brandt.html"], []), 1.0, TWO_HOP
    )
    assert whole.chain == [True, True]
    assert "1 of 2 methods retrieved all 2 chain passages" in summary_line([row, whole], TWO_HOP)


def test_the_two_hop_question_reads_its_own_chain_and_gold():
    row = method_row("ircot", _result("Korvik", ["velmora_institute.md", "korvik.txt"], []), 1.0, TWO_HOP)
    assert row.chain == [True, False] and row.gold
    text = "\n".join(method_lines(row))
    assert "1/2 chain passages" in text and "provinces.csv" not in text
    assert "0 of 1 methods retrieved all 2 chain passages; 1 answers contain 'Korvik'" in summary_line(
        [row], TWO_HOP
    )


def test_the_demo_says_when_no_method_answered_the_question():
    wrong = [method_row(m, _result("Asterra", FILES, []), 1.0) for m in ("naive", "ircot")]
    assert "No method answered 'Lunmar'" in reach_note(wrong) and "out of reach" in reach_note(wrong)
    right = [*wrong, method_row("planned", _result(GOLD, FILES, []), 1.0)]
    assert reach_note(right) == "Answered 'Lunmar': planned (1 of them retrieved the whole chain)."


def test_the_evidence_shown_is_the_sentence_holding_the_answer_not_the_bridge():
    result = _result("Korvik\nIt was founded by Ilsa Brandt. [1]\nBrandt was born in Korvik. [2]", [], [])
    result["citations"] = [
        {"explicit": True, "quote": "It was founded by Ilsa Brandt.", "source": "/c/velmora_institute.md"},
        {"explicit": True, "quote": "Brandt was born in Korvik.", "source": "/c/ilsa_brandt.html"},
    ]
    assert method_row("naive", result, 1.0).evidence == "Brandt was born in Korvik. (ilsa_brandt.html)"
