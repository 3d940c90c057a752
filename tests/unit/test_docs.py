"""The README stays a quickstart and what it and the ``docs/`` guides show stays true, with no model
loaded: every ``rag-graphs`` command line parses against the CLI (commands, options, values,
method names), every ``make`` line names a Makefile target, every JSON block parses, every
Python block compiles, every link and anchor resolves, and the method tables list the catalog.
The Python blocks run on the embedded models in ``tests/e2e/test_readme.py``."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import re
import shlex
from pathlib import Path

import pytest
import typer
import typer.core

from rag_graphs.catalog import METHODS
from rag_graphs.cli import app
from tests.snippets import LANGUAGES, PAGES, README, ROOT, Snippet, commands, snippets

README_MAX_LINES = 200
WRITTEN_ELSEWHERE = {
    "docs/mcp.md": "MCP tools for agents (issue 49 item 1)",
    "docs/models.md": "the embedded model's integration (issue 49 item 2)",
}
"""Guides the README links that another branch of issue 49 writes: a link to one is tolerated
only while the file is absent; once it exists its anchors are checked like any page's."""

_LINK = re.compile(r"\]\(([^)\s]+)\)")
_MAKE_TARGET = re.compile(r"^([A-Za-z][\w-]*):", flags=re.M)


def _lines(lang: str, program: str) -> list[tuple[Snippet, list[str]]]:
    return [(snippet, argv) for snippet in snippets(lang) for argv in commands(snippet, program)]


CLI_LINES = _lines("bash", "rag-graphs")
MAKE_LINES = _lines("bash", "make")


def test_the_readme_is_a_quickstart_under_200_lines():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines < README_MAX_LINES, f"README.md has {lines} lines: move detail into a docs/ guide"


def test_every_fence_is_a_block_of_a_known_language():
    """A fence the block parser missed (``` python, an unclosed block) would leave a snippet unchecked."""
    for page in PAGES:
        fences = sum(line.startswith("```") for line in page.read_text(encoding="utf-8").splitlines())
        found = [s for s in snippets() if s.page == page]
        assert fences == 2 * len(found), f"{page.name}: {fences} fence lines, {len(found)} blocks parsed"
        assert {s.lang for s in found} <= LANGUAGES, page.name


def _parse(argv: list[str]) -> typer.Context:
    """Parse ``rag-graphs ARGV`` as the CLI would, down to the command's options, without running it."""
    root = typer.main.get_command(app)
    ctx = typer.Context(root, info_name="rag-graphs")
    command, name, args = root, "rag-graphs", list(argv)
    while isinstance(command, typer.core.TyperGroup):
        if command is not root:
            ctx = typer.Context(command, info_name=name, parent=ctx)
        name, command, args = command.resolve_command(ctx, args)
    return command.make_context(name, args, parent=ctx)


def _method_names(params: dict) -> list[str]:
    names = [params.get("method")] if params.get("method") else []
    for key in ("methods", "compare", "pairwise"):
        names += [part.split("@")[0] for part in (params.get(key) or "").split(",") if part]
    return [name for name in names if name != "all"]


def test_the_docs_show_rag_graphs_command_lines():
    assert len(CLI_LINES) >= 30 and any(s.page == README for s, _ in CLI_LINES)


@pytest.mark.parametrize(
    ("snippet", "argv"), CLI_LINES, ids=[f"{s.name}:{' '.join(argv[:2])}" for s, argv in CLI_LINES]
)
def test_a_rag_graphs_command_line_parses(snippet, argv):
    try:
        params = _parse(argv).params
    except Exception as error:  # noqa: BLE001 - any parse error is the failure to report
        pytest.fail(f"{snippet.name}: rag-graphs {shlex.join(argv)}: {type(error).__name__}: {error}")
    unknown = [name for name in _method_names(params) if name not in METHODS]
    assert not unknown, f"{snippet.name}: rag-graphs {shlex.join(argv)}: no method {unknown}"


def test_the_command_check_catches_a_wrong_line():
    """The check above is not vacuous: a misspelt command, option or value is caught."""
    for argv in (["ask", "--no-such-option", "q"], ["graph", "bild"], ["eval", "--n", "many"]):
        with pytest.raises(Exception):  # noqa: B017, PT011 - click's and typer's usage errors alike
            _parse(argv)
    assert _method_names(_parse(["eval", "-m", "naive,ircott", "--compare", "hyde,naive@runs/x"]).params) == [
        "naive",
        "ircott",
        "hyde",
        "naive",
    ]


@pytest.mark.parametrize(("snippet", "argv"), MAKE_LINES, ids=[s.name for s, _ in MAKE_LINES])
def test_a_make_line_names_a_makefile_target(snippet, argv):
    targets = set(_MAKE_TARGET.findall((ROOT / "Makefile").read_text(encoding="utf-8")))
    goals = [word for word in argv if "=" not in word and not word.startswith("-")]
    assert goals and set(goals) <= targets, f"{snippet.name}: make {shlex.join(argv)}"


PYTHON_CODE = [(s, code) for s in snippets("bash") for code in re.findall(r"python -c '([^']*)'", s.code)]
PYTHON_MODULES = [(s, name) for s in snippets("bash") for name in re.findall(r"python -m ([\w.]+)", s.code)]


@pytest.mark.parametrize(("snippet", "code"), PYTHON_CODE, ids=[s.name for s, _ in PYTHON_CODE])
def test_a_python_one_liner_imports_what_exists(snippet, code):
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and node.module:
            module = importlib.import_module(node.module)
            missing = [alias.name for alias in node.names if not hasattr(module, alias.name)]
            assert not missing, f"{snippet.name}: {node.module} has no {missing}"


@pytest.mark.parametrize(
    ("snippet", "name"), PYTHON_MODULES, ids=[f"{s.name}:{m}" for s, m in PYTHON_MODULES]
)
def test_a_python_m_module_is_installed(snippet, name):
    assert importlib.util.find_spec(name) is not None, f"{snippet.name}: python -m {name}: not installed"


@pytest.mark.parametrize("snippet", snippets("json"), ids=lambda s: s.name)
def test_a_json_block_parses(snippet):
    json.loads(snippet.code)


@pytest.mark.parametrize("snippet", snippets("python", "py"), ids=lambda s: s.name)
def test_a_python_block_compiles(snippet):
    compile(snippet.code, snippet.name, "exec")


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but ``-`` and ``_`` dropped, spaces to ``-``."""
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    headings = re.findall(r"^#+ (.+)$", text, flags=re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_and_anchor_resolves(page):
    for target in _LINK.findall(page.read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        relative = file.relative_to(ROOT).as_posix() if file.is_relative_to(ROOT) else str(file)
        if relative in WRITTEN_ELSEWHERE and not file.exists():
            continue
        assert file.exists(), f"{page.name}: link to {target}: no such file"
        assert not anchor or anchor in _anchors(file), f"{page.name}: link to {target}: no such heading"


@pytest.mark.parametrize("page", [README, ROOT / "docs" / "methods.md"], ids=lambda p: p.name)
def test_the_method_tables_list_every_method(page):
    listed = set(re.findall(r"`(\w+)`", "\n".join(re.findall(r"^\|.*\|$", page.read_text(), flags=re.M))))
    assert set(METHODS) <= listed, f"{page.name} lacks {sorted(set(METHODS) - listed)}"


def _env_names(text: str) -> set[str]:
    return set(re.findall(r"\bRAG_GRAPHS_[A-Z0-9_]*[A-Z0-9]\b", text))


def test_every_environment_variable_the_docs_name_is_read_by_the_code():
    named = set().union(*(_env_names(page.read_text(encoding="utf-8")) for page in PAGES))
    source = "\n".join(
        path.read_text(encoding="utf-8")
        for folder in ("rag_graphs", "ingestion")
        for path in (ROOT / folder).rglob("*.py")
    )
    assert len(named) > 40 and not {name for name in named if name not in source}


def test_the_settings_guide_lists_every_setting():
    from rag_graphs.config.context import RagContext

    listed = _env_names((ROOT / "docs" / "settings.md").read_text(encoding="utf-8"))
    assert not set(RagContext.env_vars().values()) - listed


def test_the_layout_map_names_every_module():
    """docs/layout.md is the repository's map: a module it does not name is a module nobody finds
    (the map had fallen 55 modules behind). A method's file is covered by "one graph per file"."""
    root = Path(__file__).resolve().parents[2]
    text = (root / "docs" / "layout.md").read_text(encoding="utf-8")
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    unnamed = [
        str(path.relative_to(root))
        for folder in ("rag_graphs", "ingestion", "prompts")
        for path in sorted((root / folder).rglob("*.py"))
        if path.stem != "__init__" and path.parent.name != "methods" and path.stem not in words
    ]
    assert not unnamed, f"put these on docs/layout.md's map: {unnamed}"


def test_the_architecture_page_lists_the_layers_in_order():
    """docs/architecture.md's layer table says what each layer owns: its rows are the layers
    ``tests/unit/test_layout.py`` enforces, lowest first."""
    from tests.unit.test_layout import LAYERS

    root = Path(__file__).resolve().parents[2]
    text = (root / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text[text.index("## Layers") :].split("\n\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z_]+)` \|", table, re.MULTILINE)
    assert rows == [name.removeprefix("rag_graphs.") for name in sorted(LAYERS, key=LAYERS.get)]
