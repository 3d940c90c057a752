"""The package's imports follow docs/architecture.md's dependency direction, and settings stay light.

Every module of ``rag_graphs``, including ``rag_graphs.ingestion`` and ``rag_graphs.prompts`` (the
project's top-level ``ingestion/`` and ``prompts/`` folders, installed under the package's namespace), is
parsed (never imported) and its
imports read: those at module level, those inside functions (the lazy way to reach a heavy
module) and those under ``TYPE_CHECKING``. An import may go down the layers or stay in its
layer, never up, wherever it is written: a lazy import only hides an upward dependency from
the import system, not from the design. No import forms a cycle, lazy or not.

The layout stays readable: at most 16 modules and subpackages at the top of ``rag_graphs/`` and of
``ingestion/``, each top-level entry in a layer of its own, no two subpackages importing each other,
and no module over 400 lines.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"prompts": "rag_graphs.prompts", "ingestion": "rag_graphs.ingestion", "rag_graphs": "rag_graphs"}
"""Folder at the project root -> the dotted name its modules import as."""

LAYERS: dict[str, int] = {
    "rag_graphs.catalog": 0,
    "rag_graphs.prompts": 1,
    "rag_graphs.support": 2,
    "rag_graphs.state": 3,
    "rag_graphs.config": 4,
    "rag_graphs.llm": 5,
    "rag_graphs.store": 6,
    "rag_graphs.entity_graph": 7,
    "rag_graphs.ingestion": 8,
    "rag_graphs.search": 9,
    "rag_graphs.text": 10,
    "rag_graphs.nodes": 11,
    "rag_graphs.methods": 12,
    "rag_graphs.run": 13,
    "rag_graphs.serve": 14,
    "rag_graphs.eval": 15,
    "rag_graphs.cli": 16,
}
"""One layer per top-level module and subpackage, lowest first (docs/architecture.md's layers): a
module belongs to the longest prefix listed here, and imports only from its own layer or a lower
one. Every top-level module and subpackage of ``rag_graphs`` is listed
(``test_every_top_level_entry_has_a_layer``), so a new one is placed on purpose."""

MAX_TOP_LEVEL = 16
"""Modules and subpackages at the top of ``rag_graphs/`` and of ``ingestion/`` at most."""
MAX_LINES = 400
"""Lines of one module at most."""

HEAVY = {"docling", "docling_core", "docling_parse", "docling_ibm_models", "torch", "transformers"}


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    lazy: bool  # inside a function
    typing_only: bool  # under ``if TYPE_CHECKING:``

    def __str__(self) -> str:
        how = " (in a function)" if self.lazy else " (TYPE_CHECKING)" if self.typing_only else ""
        return f"{self.source}:{self.line} imports {self.target}{how}"


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of our packages."""
    found = {}
    for folder, dotted in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([dotted, *parts])] = path
    return found


def _ours(name: str, known: dict[str, Path]) -> str | None:
    """The module of ours ``name`` lands in (``a.b.func`` -> ``a.b``), or None."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(known: dict[str, Path]) -> list[Import]:
    """Every import of one of our modules by another, where it is written."""
    found: list[Import] = []
    for module, path in known.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]

        def visit(node: ast.AST, lazy: bool, typing_only: bool, module: str = module, package: str = package):
            for child in ast.iter_child_nodes(node):
                inner_lazy = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                inner_typing = typing_only or (
                    isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)
                )
                names: list[str] = []
                if isinstance(child, ast.Import):
                    names = [alias.name for alias in child.names]
                elif isinstance(child, ast.ImportFrom):
                    base = child.module or ""
                    if child.level:
                        anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                        base = ".".join([*anchor, *([child.module] if child.module else [])])
                    names = [f"{base}.{alias.name}" for alias in child.names]
                    if known.get(base, Path()).name == "__init__.py":  # ``from pkg import mod`` runs
                        names.append(base)  # pkg's __init__ too: a cycle through it is a cycle
                for name in names:
                    target = _ours(name, known)
                    if target and target != module:
                        found.append(Import(module, target, child.lineno, inner_lazy, inner_typing))
                visit(child, inner_lazy, inner_typing)

        visit(ast.parse(path.read_text(encoding="utf-8")), False, False)
    return found


def layer(module: str) -> tuple[str, int]:
    """The layer ``module`` belongs to (its name in ``LAYERS`` and its height)."""
    if module == "rag_graphs":  # the package's facade: re-exports public names on first use
        return module, max(LAYERS.values()) + 1
    homes = [name for name in LAYERS if module == name or module.startswith(name + ".")]
    best = max(homes, key=len)
    return best, LAYERS[best]


def cycles(edges: list[Import]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


@pytest.fixture(scope="module")
def edges() -> list[Import]:
    return imports(modules())


def test_the_walk_sees_the_imports(edges: list[Import]) -> None:
    """The walker itself: it finds known imports of each kind, so an empty result means something."""
    seen = {(e.source, e.target, e.lazy) for e in edges}
    assert (
        "rag_graphs.nodes.decide",
        "rag_graphs.prompts",
        False,
    ) in seen  # from rag_graphs.prompts import load_prompt
    assert ("rag_graphs.ingestion.pipeline", "rag_graphs.store.index", False) in seen
    assert ("rag_graphs.methods.naive", "rag_graphs.nodes.builder", False) in seen
    assert layer("rag_graphs.nodes.inputs") == ("rag_graphs.nodes", LAYERS["rag_graphs.nodes"])
    assert layer("rag_graphs.eval.runner")[0] == "rag_graphs.eval"
    assert layer("rag_graphs.search.retrieval")[0] == "rag_graphs.search"
    assert layer("rag_graphs.store.index")[0] == "rag_graphs.store"
    assert layer("rag_graphs.ingestion")[0] == "rag_graphs.ingestion"
    assert layer("rag_graphs.prompts.fencing")[0] == "rag_graphs.prompts"


def test_the_catalog_imports_nothing_of_ours(edges: list[Import]) -> None:
    """Settings read the method names from ``rag_graphs.catalog``, so it must stay a leaf."""
    assert [str(e) for e in edges if e.source == "rag_graphs.catalog"] == []


def test_no_import_goes_up_a_layer(edges: list[Import]) -> None:
    upward = [
        f"{edge}: {layer(edge.source)[0]} -> {layer(edge.target)[0]}"
        for edge in edges
        if layer(edge.target)[1] > layer(edge.source)[1]
    ]
    assert not upward, "imports against the dependency direction:\n" + "\n".join(upward)


def test_one_layer_per_subpackage_and_no_two_import_each_other(edges: list[Import]) -> None:
    """Every subpackage has a layer of its own, and no two subpackages import each other, lazily or
    not (a lazy import hides the dependency from the import system, not from the design)."""
    assert len(set(LAYERS.values())) == len(LAYERS), "two entries share a layer"
    between: dict[tuple[str, str], str] = {}
    for edge in edges:
        pair = (layer(edge.source)[0], layer(edge.target)[0])
        if pair[0] != pair[1]:
            between.setdefault(pair, str(edge))
    mutual = sorted(f"{a} <-> {b}: {between[a, b]}; {between[b, a]}" for a, b in between if (b, a) in between)
    assert not mutual, "subpackages importing each other:\n" + "\n".join(mutual)


def test_no_import_cycle_at_module_level(edges: list[Import]) -> None:
    found = cycles([e for e in edges if not e.lazy and not e.typing_only])
    assert not found, f"module-level import cycles: {found}"


def test_no_import_cycle_even_through_lazy_imports(edges: list[Import]) -> None:
    """A lazy import only hides a cycle from the import system: there is none, wherever written."""
    found = cycles(edges)
    assert not found, f"import cycles: {[sorted(c) for c in found]}"


MILVUS_PACKAGES = ("pymilvus", "milvus_lite", "langchain_milvus")
"""Libraries that talk to Milvus: only ``rag_graphs.store`` imports them."""
MILVUS_IMPORT_ALLOWED = {"rag_graphs.support.quiet": "pymilvus"}
"""Module -> the Milvus library it may import for something other than talking to Milvus
(``quiet`` imports pymilvus so its log handler exists before the filter goes on it)."""


def milvus_calls(module: str, tree: ast.AST) -> list[str]:
    """Where ``module`` talks to Milvus itself: an import of a Milvus library, a read of some
    object's ``.client`` (the store's ``MilvusClient``), or a ``MilvusClient`` method called on
    something named ``client``."""
    from pymilvus import MilvusClient

    methods = {name for name in dir(MilvusClient) if not name.startswith("_")}
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        for name in names:
            top = name.partition(".")[0]
            if top in MILVUS_PACKAGES and MILVUS_IMPORT_ALLOWED.get(module) != top:
                found.append(f"{module}:{node.lineno} imports {name}")
        own = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
        if isinstance(node, ast.Attribute) and node.attr == "client" and not own:
            # ``self.client`` outside the store is a class's own client (the chat model's llama.cpp)
            found.append(f"{module}:{node.lineno} reads {ast.unparse(node)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in methods:
            owner = node.func.value
            named = (
                owner.id
                if isinstance(owner, ast.Name)
                else owner.attr
                if isinstance(owner, ast.Attribute)
                else ""
            )
            if named.lower().endswith("client"):
                found.append(f"{module}:{node.lineno} calls {ast.unparse(node.func)}")
    return found


def test_the_store_is_the_only_milvus_client() -> None:
    """``rag_graphs.store`` is the only code that talks to Milvus (docs/architecture.md): every
    read and write of a collection goes through ``store.collection.Collection``, where the query
    limit, the iterator loop and the filter hiding a file being replaced are written once. A
    module that calls the client itself can forget that filter (``communities`` and
    ``serve.access`` did). The benchmarks too: they measure the product's reads, not their own."""
    outside = {
        m: p
        for m, p in modules().items()
        if m != "rag_graphs.store" and not m.startswith("rag_graphs.store.")
    }
    sample = ast.parse("rows = index.client.query(name, filter='')\nimport pymilvus\nself.client")
    assert len(milvus_calls("sample", sample)) == 3  # a read, a call, an import; not a class's own client
    found = sorted(
        hit for m, p in outside.items() for hit in milvus_calls(m, ast.parse(p.read_text(encoding="utf-8")))
    )
    found += sorted(
        hit
        for path in sorted((ROOT / "bench").glob("*.py"))
        for hit in milvus_calls(path.stem, ast.parse(path.read_text(encoding="utf-8")))
        if hit.split(" ")[0] not in BENCH_INSTRUMENTS
    )
    assert not found, (
        "Milvus called outside rag_graphs.store (use store.collection.Collection):\n" + "\n".join(found)
    )


BENCH_INSTRUMENTS = {
    "document_count:74": "counts the store's has_collection calls by wrapping the client's class",
    "retrieval_options:125": "the chat model's llama.cpp client (its tokenizer), not Milvus",
}
"""Benchmark lines that read a ``.client`` without calling Milvus through it (the check is by name)."""


def top_level(package: str) -> list[str]:
    """The modules and subpackages at the top of ``package`` (not its ``__init__``/``__main__``,
    nor data folders without an ``__init__.py``)."""
    root = ROOT / package
    entries = [p.stem for p in root.glob("*.py") if p.stem not in ("__init__", "__main__")]
    entries += [p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").is_file()]
    return sorted(entries)


@pytest.mark.parametrize("package", ["rag_graphs", "ingestion"])
def test_at_most_twelve_modules_or_subpackages_at_the_top(package: str) -> None:
    entries = top_level(package)
    assert "nodes" in top_level("rag_graphs")  # the listing sees subpackages
    assert len(entries) <= MAX_TOP_LEVEL, f"{package}/ holds {len(entries)}: {entries}; group them by job"


def test_every_top_level_entry_has_a_layer() -> None:
    unplaced = [e for e in top_level("rag_graphs") if f"rag_graphs.{e}" not in LAYERS]
    assert not unplaced, f"give rag_graphs.{unplaced} a layer in LAYERS (and docs/architecture.md)"


def test_no_module_over_400_lines() -> None:
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()}
    assert sizes["rag_graphs.ingestion.pipeline"] > 100  # the count sees real modules
    long = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines, split them by job: {long}"


def loaded_by(code: str) -> set[str]:
    """Every module ``code`` imports in a fresh interpreter (``python -X importtime``), with the
    project first on the path and no ``RAG_GRAPHS_*`` setting from the environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_GRAPHS_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    lines = done.stderr.splitlines()
    rows = [line.split("|")[-1].strip() for line in lines if line.startswith("import time:")]
    return set(rows[1:])  # the first row is the header


def test_settings_load_no_docling_torch_or_transformers() -> None:
    loaded = loaded_by(
        "import rag_graphs; from rag_graphs import RagContext; "
        "RagContext(search_filter='kind == \"text\"', tenant='acme', web_search='searxng:http://127.0.0.1:9')"
    )
    assert "rag_graphs.config.context" in loaded  # the measurement sees our modules
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY)
    assert not heavy, f"RagContext() imported {len(heavy)} heavy modules, e.g. {heavy[:5]}"


def test_cli_help_imports_no_model_or_graph_library() -> None:
    """``rag-graphs --help`` stays fast: the command module imports settings, graphs, models
    and the store inside its commands."""
    loaded = loaded_by("import rag_graphs.cli")
    assert "rag_graphs.cli" in loaded
    slow = {*HEAVY, "langchain_core", "langgraph", "pymilvus"}
    heavy = sorted(m for m in loaded if m.split(".")[0] in slow)
    assert not heavy, f"import rag_graphs.cli loaded {len(heavy)} heavy modules, e.g. {heavy[:5]}"


def test_the_package_list_is_every_folder_once_and_no_link() -> None:
    """pyproject lists each package with the folder it comes from (``package-dir``): every folder
    with an ``__init__.py`` under ``rag_graphs/``, ``ingestion/`` and ``prompts/`` is listed, nothing
    else is, and the tree holds no symbolic link (one path per file)."""
    import tomllib

    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(settings["packages"])
    on_disk = {
        ".".join([PACKAGES[folder], *init.parent.relative_to(ROOT / folder).parts])
        for folder in PACKAGES
        for init in (ROOT / folder).rglob("__init__.py")
    }
    assert listed == on_disk, f"pyproject packages differ from the folders: {listed ^ on_disk}"
    assert settings["package-dir"] == {"rag_graphs": "rag_graphs", **{v: k for k, v in PACKAGES.items()}}
    assert {name.split(".")[0] for name in listed} == {"rag_graphs"}
    assert "templates/*.txt" in settings["package-data"]["rag_graphs.prompts"]
    staged = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True)
    links = [line.split("\t")[-1] for line in staged.stdout.splitlines() if line.startswith("120000")]
    assert not links, f"symbolic links in the repository: {links}"
