"""Every notebook runs top to bottom on the embedded defaults and shows what it promises.

Each runs the way a user runs it, ``jupyter nbconvert --to notebook --execute`` (the
``notebooks`` extra installs JupyterLab and nbconvert; ``dev`` installs nbconvert and
ipykernel only), on a copy in a temporary folder so nothing lands in the tree.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
# What each notebook's outputs must show (beyond running without an error).
SHOWS = {
    "01_quickstart.ipynb": [
        "file(s) ingested, 0 failed",
        "entity graph: built",
        "graph search (search_mode=auto",
        "explicit=",
    ],
    "02_ingestion.ipynb": ["3 file(s) ingested, 1 failed", "broken.pdf", "| Petrel", "image/png"],
    "03_iterative_and_agentic.ipynb": [
        "== fixed_step",
        "== iterative",
        "== react",
        "== ircot",
        "== auto",
        "single_hop -> naive",  # the single-hop question goes to the cheap method, as the text says
        "== hipporag",
        "graph seeds:",
        "graph search (search_mode=auto: collection 'demo' has an entity graph)",  # ingest built it
        "search_mode=hybrid:",
    ],
    "04_self_reflective.ipynb": ["== self_rag", "== crag"],
    "05_query_transformation.ipynb": [
        "== hyde",
        "== multi_query",
        "== rag_fusion",
        "== step_back",
        "== planned",
    ],
    "06_raptor.ipynb": ["nodes per level:", "== raptor", "community reports: communities:", "== graphrag"],
    "07_drag_iterdrag.ipynb": ["demonstrations (builtin)", "Follow up: ", "== drag", "== iterdrag"],
    "08_compare_methods.ipynb": [
        "| naive |",
        "| ircot |",
        "| rag_fusion |",
        "image/png",
        "no difference detected at n=4",
        "**Frontier**",
        "6 questions written from the store",
        "bridge (2 hop): Where was the founder of the",
        "| hipporag | 6 |",
    ],
}

pytestmark = pytest.mark.embedded


def test_every_notebook_states_what_it_shows():
    assert NOTEBOOKS and {p.name for p in NOTEBOOKS} == set(SHOWS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes_without_errors(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    assert not [c for c in nb.cells if c.cell_type == "code" and c.outputs], (
        "commit notebooks without outputs"
    )
    copy = shutil.copy(path, tmp_path / path.name)
    command = [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", str(copy)]
    options = ["--output", "executed.ipynb", "--ExecutePreprocessor.timeout=600"]
    done = subprocess.run(
        [*command, *options, "--ExecutePreprocessor.kernel_name=python3"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"{path.name}: nbconvert failed\n{done.stderr[-3000:]}"
    nb = nbformat.read(tmp_path / "executed.ipynb", as_version=4)
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    shown = json.dumps([o for o in outputs], default=str)
    for expected in SHOWS[path.name]:
        assert expected in shown, f"{path.name} does not show {expected!r}"
