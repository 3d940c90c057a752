"""The extract reader wired into every method's answer (``RagContext.reader``), the evaluator and
its report: no model call for the answer, citations that resolve like a model's, ``auto``'s
choice. The reader's own choices are pinned in ``tests/unit/test_reader*.py``."""

from __future__ import annotations

import itertools
import json

import pytest
from langchain_core.documents import Document
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from rag_graphs.catalog import METHODS
from rag_graphs.config.context import RagContext
from rag_graphs.eval import EvalOptions, evaluate, read_rows, summarize, write_report
from rag_graphs.eval.report import by_type_table, markdown_table
from rag_graphs.ingestion.raptor import build_tree, tree_collection
from rag_graphs.methods import get_graph
from rag_graphs.nodes.reading import reader_of
from rag_graphs.store import open_index
from tests.conftest import fake_chat
from tests.contract import check_contract, said_by
from tests.graphs import prepare

QUESTION = "In which town was the founder of the Velmora Institute born?"


def _nothing_to_say() -> GenericFakeChatModel:
    """A chat model that fails when called: the reader must not call it."""
    return GenericFakeChatModel(messages=iter([]))


# -- which reader a run answers with ---------------------------------------------------------


def test_auto_extracts_on_the_embedded_model_and_generates_on_any_other(fake_embeddings, monkeypatch):
    monkeypatch.delenv("RAG_GRAPHS_READER", raising=False)
    assert RagContext().reader == "auto"
    assert reader_of(RagContext(chat_model="embedded")) == "extract"
    assert reader_of(RagContext(chat_model="ollama:qwen3:8b")) == "generate"
    assert reader_of(RagContext(chat_model=fake_chat("x"))) == "generate"  # a model object: not embedded
    assert reader_of(RagContext(chat_model="ollama:qwen3:8b", reader="extract")) == "extract"
    assert reader_of(RagContext(chat_model="embedded", reader="generate")) == "generate"


def test_the_reader_is_read_from_the_environment_and_checked(monkeypatch):
    monkeypatch.setenv("RAG_GRAPHS_READER", "extract")
    assert RagContext(chat_model="openai:gpt-4.1-mini").reader == "extract"
    monkeypatch.setenv("RAG_GRAPHS_READER", "guess")
    with pytest.raises(ValueError, match="RAG_GRAPHS_READER"):
        RagContext()


# -- the answer: no model call, citations that resolve, the chain in steps -------------------


def test_naive_extracts_its_answer_without_a_model_call(loaded, make_context):
    ctx = make_context(chat_model=_nothing_to_say(), reader="extract", k=3)
    out = get_graph("naive").invoke({"question": QUESTION}, context=ctx)
    assert out["usage"].get("llm_calls", 0) == 0 and out["usage"]["retrievals"] == 1
    check_contract(out, method="naive", ctx=ctx)
    if out["outcome"] == "no_evidence":
        assert out["answer"].startswith("I do not know.") and "do not answer it" in out["answer"]
        assert not any(c["explicit"] for c in out["citations"])
        return
    short, *evidence = out["answer"].splitlines()
    assert short and evidence and all(line.rstrip().endswith("]") for line in evidence)
    by_id = {str(d.id): d for d in out["documents"]}
    for cite in out["citations"]:  # each quotes its evidence sentence, from the passage it names
        assert cite["explicit"] and said_by(cite["quote"], by_id[cite["chunk_id"]].page_content)
        assert cite["quote"] in out["answer"] or cite["quote"].split()[0] in out["answer"]
    steps = out["steps"]
    assert steps[-1]["kind"] == "generate" and steps[-1]["text"].startswith("extracted (")
    chain = [s for s in steps if s["kind"] == "note" and s["text"].startswith("evidence ")]
    assert chain and all(len(s["doc_ids"]) == 1 for s in chain)


def test_a_passage_that_plants_a_citation_marker_is_not_cited_by_it(make_context, monkeypatch):
    """The evidence sentence's own ``[2]`` is shown as ``⟦2⟧``: only the reader's markers cite."""
    from rag_graphs.nodes import reading
    from rag_graphs.text.reader import Evidence, Reading

    docs = [
        Document(
            page_content="Korvik [2] is where Ilsa Brandt was born.", id="a", metadata={"source": "a.md"}
        ),
        Document(page_content="Unrelated.", id="b", metadata={"source": "b.md"}),
    ]
    planted = "Korvik [2] is where Ilsa Brandt was born."
    found = Reading(
        "Korvik", "place", planted, 0, (Evidence(0, planted),), 0.9, False, "place in the sentence"
    )
    monkeypatch.setattr(reading, "read", lambda *a, **k: found)
    ctx = make_context(reader="extract")
    out = reading.read_answer({"question": QUESTION}, ctx, docs)
    assert out["answer"].splitlines() == ["Korvik", "Korvik ⟦2⟧ is where Ilsa Brandt was born. [1]"]
    assert [(c["marker"], c["chunk_id"], c["quote"]) for c in out["citations"]] == [(1, "a", planted)]


def test_no_evidence_says_so_and_cites_the_context_it_read(make_context, monkeypatch):
    from rag_graphs.nodes import reading
    from rag_graphs.text.reader import Reading

    docs = [Document(page_content="The weather was mild.", id="a", metadata={"source": "a.md"})]
    nothing = Reading("", "place", "", None, (), 0.1, True, "no place named in the passages")
    monkeypatch.setattr(reading, "read", lambda *a, **k: nothing)
    out = reading.read_answer({"question": QUESTION}, make_context(reader="extract"), docs)
    assert out["answer"].splitlines()[0] == "I do not know."
    assert "no place named in the passages" in out["answer"]
    assert [(c["chunk_id"], c["explicit"]) for c in out["citations"]] == [("a", False)]


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_keeps_the_contract_with_the_extract_reader(loaded, make_context, method):
    """The same scripted replies as the generate reader's contract test (``test_multihop``)."""
    reply = 'Action: search[Velmora founder] {"relevance": "correct", "enough": true} Korvik [1].'
    ctx = make_context(*[reply] * 12, reader="extract")
    if method == "raptor":  # RAPTOR answers from its tree, built beforehand
        build_tree(loaded, fake_chat(*["a summary"] * 20), progress=False)
    if method in ("hipporag", "graphrag"):
        prepare(loaded, method)
    out = get_graph(method).invoke({"question": QUESTION}, context=ctx)
    check_contract(out, method=method, ctx=ctx)
    answered = [s for s in out["steps"] if s["kind"] == "generate"]
    if out["documents"]:  # the answer was read out of the passages, not written by the model
        assert answered[-1]["text"].startswith(("extracted (", "I do not know.")), answered[-1]
    collection = tree_collection(loaded.collection) if method == "raptor" else loaded.collection
    stored = open_index(loaded.uri, collection, loaded.embeddings).get(
        [c["chunk_id"] for c in out["citations"]]
    )
    assert {str(d.id) for d in stored} == {c["chunk_id"] for c in out["citations"]}


def _read_by_the_reader(out: dict) -> None:
    """The run's answer is the reader's: each explicit citation quotes a sentence of a passage
    the run gathered, and the answer's line marked with its ``[n]`` is that sentence."""
    assert out["steps"][-1]["kind"] == "generate" and out["steps"][-1]["text"].startswith(
        ("extracted (", "I do not know.")
    ), out["steps"][-1]
    by_id = {str(d.id): d for d in out["documents"]}
    lines = out["answer"].splitlines()
    for cite in (c for c in out["citations"] if c["explicit"]):
        assert said_by(cite["quote"], by_id[cite["chunk_id"]].page_content)
        assert f"{cite['quote']} [{cite['marker']}]" in lines


def test_react_final_answer_is_read_by_the_reader(loaded, make_context):
    ctx = make_context(
        "Thought: who founded it?\nAction: search[Velmora Institute founder]",
        "Thought: enough\nFinal Answer: Ilsa Brandt founded it [1].",
        k=2,
        reader="extract",
    )
    out = get_graph("react").invoke({"question": QUESTION}, context=ctx)
    assert out["usage"]["llm_calls"] == 2 and "Ilsa Brandt founded it" not in out["answer"]
    assert out["stop_reason"] == "enough" or out["outcome"] == "no_evidence"
    _read_by_the_reader(out)


def test_iterdrag_final_answer_is_read_by_the_reader(loaded, make_context):
    ctx = make_context("So the final answer is: Halden [1].", k=2, reader="extract")
    out = get_graph("iterdrag").invoke({"question": QUESTION}, context=ctx)
    assert out["usage"]["llm_calls"] == 1 and not out["answer"].startswith("Halden")
    _read_by_the_reader(out)


def test_the_generate_reader_still_asks_the_model(loaded, make_context):
    ctx = make_context("Korvik [1].", reader="generate")
    out = get_graph("naive").invoke({"question": QUESTION}, context=ctx)
    assert out["answer"] == "Korvik [1]." and out["usage"]["llm_calls"] == 1


# -- evaluation: rows carry the reader, the report compares readers ---------------------------


def test_an_evaluation_compares_readers_in_one_run(tiny, make_context, tmp_path):
    model = GenericFakeChatModel(messages=itertools.cycle([AIMessage(content="Korvik [1].")]))
    ctx = make_context(chat_model=model, k=2)
    where = {"run_dir": tmp_path / "run", "eval_store": str(tmp_path / "eval.db"), "progress": False}
    run = evaluate(
        tiny, ["naive"], context=ctx, options=EvalOptions(readers=("extract", "generate"), **where)
    )
    rows = read_rows(run)
    assert sorted((r["reader"], r["id"]) for r in rows) == sorted(
        (reader, q) for reader in ("extract", "generate") for q in ("q0", "q1", "q2")
    )
    assert all(r["llm_calls"] == 0 for r in rows if r["reader"] == "extract")
    assert all(
        r["llm_calls"] == 1 and r["prediction"] == "Korvik [1]." for r in rows if r["reader"] == "generate"
    )
    assert json.loads((run / "config.json").read_text())["readers"] == ["extract", "generate"]
    table = markdown_table(summarize(rows))
    assert table.splitlines()[0].startswith("| method | reader | n | EM | F1 | contains |")
    assert "| naive | extract | 3 |" in table and "| naive | generate | 3 |" in table
    text = write_report(run).read_text()
    assert "reader `extract`, `generate`" in text and "By question type" in text
    by_type = by_type_table(rows)
    assert "naive (extract) EM / F1 / contains" in by_type and "| bridge | 2 |" in by_type
    # resumed: nothing is run again, for either reader
    again = evaluate(
        tiny, ["naive"], context=ctx, options=EvalOptions(readers=("extract", "generate"), **where)
    )
    assert len(read_rows(again)) == 6


def test_a_run_without_readers_records_the_contexts_and_old_rows_read_as_generated(
    tiny, make_context, tmp_path
):
    model = GenericFakeChatModel(messages=itertools.cycle([AIMessage(content="Korvik [1].")]))
    where = {"run_dir": tmp_path / "run", "eval_store": str(tmp_path / "eval.db"), "progress": False}
    run = evaluate(
        tiny, ["naive"], context=make_context(chat_model=model, k=2), options=EvalOptions(limit=1, **where)
    )
    rows = read_rows(run)
    assert [r["reader"] for r in rows] == ["generate"]  # a fake model: auto resolves to generate
    old = {k: v for k, v in rows[0].items() if k != "reader"}  # a row from before the reader existed
    assert summarize([old])[0].reader == "generate"
    with pytest.raises(ValueError, match="reader"):
        evaluate(
            tiny, ["naive"], context=make_context(chat_model=model), options=EvalOptions(readers=("guess",))
        )  # type: ignore[arg-type]
