"""Derived structures are one concept (issue 48): each structure's existence is asked in its own
module, once; everything else asks through it, and what gets built or routed around is read from the
methods' declaration (``catalog.REQUIRES``), never from a method's name.

Like ``test_layout.py``, modules are parsed, never imported."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rag_graphs.catalog import METHODS, REQUIRES, STRUCTURES, required
from tests.unit.test_layout import modules

CHECKS: dict[str, tuple[str, str]] = {
    "entity_graph": ("has_graph", "rag_graphs.entity_graph.rows"),
    "sentences": ("has_sentences", "rag_graphs.store.sentences"),
    "raptor_tree": ("has_tree", "rag_graphs.search.tree"),
    "reports": ("has_reports", "rag_graphs.search.reports"),
}
"""Structure -> the one function that says whether a store has it, and its module."""

COLLECTION_NAMES: dict[str, set[str]] = {
    "entity_graph": {"entity_collection"},
    "sentences": {"sentence_collection", "children_of"},
    "raptor_tree": {"tree_collection", "tree_context"},
    "reports": {"reports_collection", "report_context", "report_index"},
}
"""Structure -> the helpers that name or open its collection."""

OWN: dict[str, set[str]] = {
    "entity_graph": {"rag_graphs.entity_graph.rows"},
    "sentences": {"rag_graphs.store.sentences"},
    "raptor_tree": {"rag_graphs.store.tree", "rag_graphs.search.tree"},
    "reports": {"rag_graphs.store.reports", "rag_graphs.search.reports"},
}
"""Structure -> its own modules: its rows (``store``, ``entity_graph.rows``) and its reads."""

KNOWN: dict[str, str] = {
    "rag_graphs.store.derived": "forget_derived deletes tree and report rows where their collection "
    "exists; a store-layer guard below the checks, left to the store's reshape (issue 48 item 1)",
}
"""Modules that still test a structure's collection themselves, each with why."""

DECIDERS = ("rag_graphs.eval", "rag_graphs.methods.auto", "rag_graphs.cli")
"""Modules that build or route by what methods need: they read ``REQUIRES``, never test names."""

EXISTENCE_CALLS = {"has_collection", "count", "exists"}
"""How the store is asked whether a collection is there: the client's own call, or the store's collection
primitive (``store.collection.Collection.exists``, ``count``)."""


def _names(node: ast.AST) -> set[str]:
    """Every name and attribute a piece of code mentions."""
    found = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            found.add(child.id)
        elif isinstance(child, ast.Attribute):
            found.add(child.attr)
    return found


def _called(node: ast.AST) -> set[str]:
    """The names of the functions and methods a piece of code calls."""
    out = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Call):
            func = child.func
            out.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return out


@pytest.fixture(scope="module")
def trees() -> dict[str, ast.Module]:
    return {name: ast.parse(Path(path).read_text(encoding="utf-8")) for name, path in modules().items()}


def _asks(fn: ast.AST, helpers: set[str]) -> bool:
    """True when ``fn`` asks the store whether a collection named by ``helpers`` is there: a
    ``has_collection`` or ``count`` call on it or with it, directly (``children_of(i).count()``)
    or through a name bound from one (``name = sentence_collection(c)``, ``for name in (...)``)."""
    named = set(helpers)
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and _names(node.value) & helpers:
            named |= {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.For | ast.comprehension) and _names(node.iter) & helpers:
            named |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in EXISTENCE_CALLS and any(
                _names(part) & named for part in (node.func.value, *node.args)
            ):
                return True
    return False


def existence_checks(trees: dict[str, ast.Module]) -> list[tuple[str, str, str]]:
    """(module, function, structure) for every function that asks the store whether a
    structure's collection is there (``has_collection``, ``count``)."""
    found = []
    for module, tree in trees.items():
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                found += [
                    (module, getattr(fn, "name", "<lambda>"), structure)
                    for structure, helpers in COLLECTION_NAMES.items()
                    if _asks(fn, helpers)
                ]
    return found


def test_every_structure_has_one_check_in_its_own_module(trees):
    assert set(CHECKS) == set(STRUCTURES) == set(COLLECTION_NAMES) == set(OWN)
    for structure, (function, home) in CHECKS.items():
        defined = [
            module
            for module, tree in trees.items()
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.name == function
        ]
        assert defined == [home], f"{structure}: {function} defined in {defined}, not once in {home}"
        assert home in OWN[structure]


def test_the_structure_table_asks_each_structures_own_check(trees):
    """``search.structures`` answers by name through the four checks, implementing none itself."""
    table = trees["rag_graphs.search.structures"]
    assert {function for function, _ in CHECKS.values()} <= _names(table)
    assert not _called(table) & EXISTENCE_CALLS


def test_no_module_outside_a_structures_own_asks_whether_it_exists(trees):
    outside = [
        f"{module}.{function} asks whether the {structure} exists (use {CHECKS[structure][0]})"
        for module, function, structure in existence_checks(trees)
        if module not in OWN[structure] and module not in KNOWN
    ]
    assert outside == []
    flagged = {module for module, _, _ in existence_checks(trees)}
    assert set(KNOWN) <= flagged, f"no longer asking, drop from KNOWN: {set(KNOWN) - flagged}"


def test_the_walk_sees_an_existence_check_written_outside(trees):
    """The check itself: it finds the owners' own checks, and one written anywhere else."""
    found = {(m, s) for m, _, s in existence_checks(trees)}
    assert ("rag_graphs.search.tree", "raptor_tree") in found
    assert ("rag_graphs.store.sentences", "sentences") in found
    stray = ast.parse(
        "def has_tree_too(ctx):\n    return index_for(tree_context(ctx)).count() > 0\n"
    )  # what methods/raptor.py held before the tree's reads moved to search/tree.py
    assert existence_checks({"rag_graphs.methods.raptor": stray}) == [
        ("rag_graphs.methods.raptor", "has_tree_too", "raptor_tree")
    ]


def method_name_tests(trees: dict[str, ast.Module]) -> list[str]:
    """Comparisons with a method that declares structures (``"graphrag" in methods``,
    ``method == "raptor"``) in the modules that decide what to build or route around."""
    found = []
    for module, tree in trees.items():
        if not any(module == d or module.startswith(d + ".") for d in DECIDERS):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                named = [s.value for s in sides if isinstance(s, ast.Constant) and s.value in REQUIRES]
                if named:
                    found.append(f"{module}:{node.lineno} tests the name {named[0]!r}")
    return found


def test_builds_and_routes_read_the_declaration_not_method_names(trees):
    assert method_name_tests(trees) == []
    before = ast.parse('if "raptor" in methods:\n    build_tree()\n')  # eval/runner.py before issue 48
    found = method_name_tests({"rag_graphs.eval.runner": before})
    assert found == ["rag_graphs.eval.runner:1 tests the name 'raptor'"]


def test_the_declaration_names_known_methods_and_structures():
    assert set(REQUIRES) <= set(METHODS)
    assert {s for needs in REQUIRES.values() for s in needs} <= set(STRUCTURES)
    assert required(["graphrag", "naive", "raptor"]) == ("entity_graph", "reports", "raptor_tree")
    assert required(["naive"]) == ()
