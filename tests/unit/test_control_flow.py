"""Control flow reads typed fields only: routers return ``Literal``s and read ``stop_kind``,
never the words of ``stop_reason``; nodes are registered through public LangGraph API."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rag_graphs.methods import crag, iterdrag, react, self_rag
from rag_graphs.nodes.decide import retrieve_until_stopped
from rag_graphs.nodes.generate import outcome_of
from rag_graphs.nodes.loop import STOP_ENOUGH, Budget, Stop, stop_update

ROOT = Path(__file__).resolve().parents[2]
WIRED = [
    *sorted((ROOT / "rag_graphs/nodes").glob("*.py")),
    *sorted((ROOT / "rag_graphs/methods").glob("*.py")),
]


def _routers() -> dict[str, ast.FunctionDef]:
    """Every function a method or node passes to ``add_conditional_edges``, by name."""
    defined: dict[str, ast.FunctionDef] = {}
    wired: set[str] = set()
    for path in WIRED:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                defined[node.name] = node
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_conditional_edges"
                and isinstance(node.args[1], ast.Name)
            ):
                wired.add(node.args[1].id)
    return {name: defined[name] for name in sorted(wired)}


def test_routers_return_literals_and_never_read_the_stop_reason() -> None:
    routers = _routers()
    assert {"retrieve_until_stopped", "route_after_agent", "route_after_iterate"} <= set(routers)
    untyped = [
        name for name, fn in routers.items() if "Literal[" not in ast.unparse(fn.returns or ast.Constant())
    ]
    assert untyped == []
    readers = [name for name, fn in routers.items() if "stop_reason" in ast.unparse(fn)]
    assert readers == []


def test_no_private_langgraph_api() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for package in ("rag_graphs", "ingestion", "prompts")
        for path in sorted((ROOT / package).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom | ast.Import)
        and any(
            "._internal" in name or name.startswith("langgraph._")
            for name in (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            )
        )
    ]
    assert found == []


STOPPED = {"stop_kind": "budget", "stop_reason": "hop budget reached (3 hops)"}
WORDS_ONLY = {"stop_reason": "enough"}  # text without a kind: a router must not act on it


@pytest.mark.parametrize(
    "router,state,expected",
    [
        (retrieve_until_stopped, STOPPED, "generate"),
        (retrieve_until_stopped, WORDS_ONLY, "retrieve"),
        (crag.route_after_grade, STOPPED, "generate"),
        (crag.route_after_grade, WORDS_ONLY, "rewrite"),
        (self_rag.route_after_grade, STOPPED, "generate"),
        (self_rag.route_after_grade, WORDS_ONLY, "follow_up"),
        (self_rag.route_after_check, STOPPED, "__end__"),
        (self_rag.route_after_check, WORDS_ONLY, "follow_up"),
        (iterdrag.route_after_iterate, {"stop_kind": "enough", "stop_reason": "enough"}, "__end__"),
        (iterdrag.route_after_iterate, STOPPED, "generate"),
        (iterdrag.route_after_iterate, WORDS_ONLY, "follow_up"),
        (react.route_after_agent, {"stop_kind": "enough", "stop_reason": "enough"}, "__end__"),
        (react.route_after_agent, {**STOPPED, "tool_calls": [{"tool": "search"}]}, "generate"),
        (react.route_after_agent, {**WORDS_ONLY, "tool_calls": [{"tool": "search"}]}, "act"),
    ],
)
def test_routers_follow_the_stop_kind_not_its_words(router, state, expected) -> None:
    assert router(state) == expected


def test_stop_update_types_the_budget_without_reading_words() -> None:
    budget = Budget(3, 3, "hop")
    assert stop_update(budget.stop) == {"stop_kind": "budget", "stop_reason": "hop budget reached (3 hops)"}
    # a reason that happens to begin like a budget's is not a spent budget: the outcome reads the kind
    spent = outcome_of(stop_update(budget.stop.noted(" without a correct passage")), "Korvik.", [])
    repeated = outcome_of(stop_update(Stop("repeated", "hop budget reached (3 hops)")), "Korvik.", [])
    assert (spent, repeated) == ("budget_exhausted", "answered")
    assert stop_update(STOP_ENOUGH)["stop_kind"] == "enough"
    assert stop_update(None) == {"stop_kind": None, "stop_reason": ""}
