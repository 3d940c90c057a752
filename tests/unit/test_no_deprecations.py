"""Our code calls no deprecated API when it is imported, and the test settings hide no deprecation."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Every module of our three packages, imported fresh, with deprecations attributed to our own
# modules (the caller's line, as ``warnings.warn(..., stacklevel=2)`` reports it) made errors.
IMPORT_ALL = """
import importlib, pkgutil, warnings
for category in (DeprecationWarning, PendingDeprecationWarning):
    warnings.filterwarnings("error", category=category, module=r"(rag_graphs|ingestion|prompts)(\\.|$)")
for package in ("rag_graphs",):  # with rag_graphs.ingestion and rag_graphs.prompts
    root = importlib.import_module(package)
    for module in pkgutil.walk_packages(root.__path__, package + "."):
        importlib.import_module(module.name)
print("ok")
"""


def test_importing_every_module_calls_no_deprecated_api():
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_pytest_hides_only_named_third_party_deprecations():
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    for rule in settings.get("filterwarnings", []):
        action, _, rest = rule.partition(":")
        if action == "ignore" and "Deprecation" in rule:
            # ignore:<message>:<category>:<module>: a module (or a message) must name the source.
            message, _, rest = rest.partition(":")
            _category, _, module = rest.partition(":")
            assert module.strip() or message.strip(), f"{rule!r} hides every deprecation"
            assert not module.startswith(("rag_graphs", "ingestion", "prompts")), f"{rule!r} hides ours"
