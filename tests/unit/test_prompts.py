"""Every prompt file loads, takes exactly the variables its users pass, and is used."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_graphs.prompts import PromptNotFoundError, list_prompts, load_prompt

ROOT = Path(__file__).resolve().parents[2]

# The variables each template's callers pass (grep load_prompt("name") to find them).
EXPECTED_VARIABLES = {
    "picture_describe": {"caption", "context"},
    "picture_extract_text": {"caption", "context"},
    "picture_chart": {"caption", "context"},
    "answer_with_citations": {"context", "question"},
    "json_format_instructions": {"schema"},
    "answer_with_notes": {"context", "notes", "question"},
    "decide_enough": {"context", "notes", "question"},
    "first_subquestion": {"question"},
    "intermediate_answer": {"context", "query"},
    "iterdrag_intermediate": {"context", "query"},
    "next_query": {"notes", "question"},
    "grade_correctness": {"passage", "question"},
    "rewrite_for_search": {"query", "question"},
    "ircot_reason": {"context", "notes", "question"},
    "decide_retrieval": {"question"},
    "check_grounded": {"answer", "context"},
    "judge_grounded": {"answer", "context"},
    "judge_correctness": {"answer", "question", "reference"},
    "judge_citation": {"claim", "passage"},
    "judge_pairwise": {"criterion", "definition", "first", "question", "second"},
    "synth_bridge_question": {"answer", "entity", "passages"},
    "synth_single_question": {"answer", "passages"},
    "check_complete": {"answer", "question"},
    "grade_relevance": {"passage", "question"},
    "self_rag_follow_up": {"answer", "complete", "context", "grounded", "query", "question"},
    "budget_exhausted": {"answer", "reason"},
    "unreliable_answer": {"reason"},
    "no_evidence_answer": {"reason"},
    "extracted_answer": {"answer", "evidence"},
    "answer_directly": {"question"},
    "react_text": {"question", "scratchpad", "tools"},
    "react_tools": {"question"},
    "multi_query": {"n", "question"},
    "rag_fusion_queries": {"n", "question"},
    "hyde_passage": {"question"},
    "step_back_question": {"question"},
    "step_back_answer": {"context", "question"},
    "decompose_question": {"n", "question"},
    "plan_retrieval_path": {"n", "question"},
    "intermediate_with_background": {"context", "notes", "query"},
    "drag_answer": {"context", "demonstrations", "question"},
    "iterdrag_step": {"chain", "context", "demonstration_chains", "question"},
    "classify_question": {"question"},
    "raptor_summary": {"passages"},
    "community_report": {"entities", "material"},
    "rerank_listwise": {"count", "passages", "question"},
    "compress_extract": {"passage", "question"},
    "graphrag_map": {"question", "reports"},
    "graphrag_reduce": {"context", "notes", "question"},
    "openie": {"passage"},
}


def _source_files() -> list[Path]:
    return [p for pkg in ("rag_graphs", "ingestion") for p in (ROOT / pkg).rglob("*.py")]


def test_every_template_is_listed_in_the_expectations():
    assert set(list_prompts()) == set(EXPECTED_VARIABLES)


@pytest.mark.parametrize("name", sorted(EXPECTED_VARIABLES))
def test_template_loads_with_the_variables_its_callers_pass(name):
    template = load_prompt(name)
    assert set(template.input_variables) == EXPECTED_VARIABLES[name]
    messages = template.format_messages(**{v: f"<{v}>" for v in EXPECTED_VARIABLES[name]})
    assert messages, name
    text = "\n".join(str(m.content) for m in messages)
    for var in EXPECTED_VARIABLES[name]:
        assert f"<{var}>" in text


@pytest.mark.parametrize("name", sorted(EXPECTED_VARIABLES))
def test_every_template_is_used_by_the_code(name):
    # Templates are referred to by their quoted name (load_prompt("x"), make_generate("x")).
    users = [p for p in _source_files() if f'"{name}"' in p.read_text()]
    assert users, f"prompt {name!r} is not loaded anywhere in rag_graphs/ or ingestion/"


def test_templates_are_plain_placeholders_not_jinja():
    for name in list_prompts():
        text = (ROOT / "prompts" / "templates" / f"{name}.txt").read_text()
        assert "{%" not in text and "{{ " not in text, name


def test_unknown_prompt_names_the_available_ones():
    with pytest.raises(PromptNotFoundError, match="answer_with_citations"):
        load_prompt("no_such_prompt")


def test_malformed_template_is_rejected_with_its_file_name():
    from rag_graphs.prompts import _parse

    with pytest.raises(ValueError, match="broken.txt"):
        _parse("broken", "text before any role line\n[human]\nhi")
