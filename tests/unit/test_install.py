"""The distribution installs its three folders as one import package, with one path per file.

``ingestion/`` and ``prompts/`` sit at the project root (the product's layout) and install as
``rag_graphs.ingestion`` and ``rag_graphs.prompts`` through setuptools' ``package-dir`` mapping,
not through links: a wheel built from the checkout holds only ``rag_graphs``, imports in a venv
that never saw the checkout, and the editable install (the one ``make`` makes) resolves each
module to its real file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _python(venv: Path) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin") / "python"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel ``pip wheel`` builds from the checkout: with this environment's setuptools when it
    is new enough for pyproject (77, PEP 639 licence strings), else in pip's isolated build
    environment (setuptools from the package registry)."""
    from importlib.metadata import version

    out, source = tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):  # a copy: a build leaves build/ where it runs
        shutil.copy2(ROOT / name, source / name)
    for folder in ("rag_graphs", "ingestion", "prompts"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    isolation = [] if int(version("setuptools").split(".")[0]) < 77 else ["--no-build-isolation"]
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (built,) = out.glob("rag_graphs-*.whl")
    return built


def test_the_wheel_holds_one_top_level_package_and_the_prompt_files(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"rag_graphs"}, top
    assert "rag_graphs/ingestion/pipeline.py" in names
    assert "rag_graphs/store/index.py" in names and "rag_graphs/entity_graph/walk.py" in names
    assert "rag_graphs/prompts/templates/answer_with_citations.txt" in names
    assert not any(name.startswith(("rag_graphs/rag_graphs", "ingestion/", "prompts/")) for name in names)


def test_the_wheel_imports_in_a_clean_venv(wheel: Path, tmp_path: Path) -> None:
    """A new venv sees this environment's third-party packages (a path line, so none of its
    ``.pth`` hooks, the editable install's finder included, runs) and the wheel, nothing else."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = _python(venv)
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    third_party = [entry for entry in sys.path if entry.endswith("site-packages")]
    Path(site, "base_environment.pth").write_text("".join(f"{entry}\n" for entry in third_party))
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    code = (
        "import rag_graphs.ingestion.pipeline as p, rag_graphs.prompts as q, rag_graphs.store.index as s;"
        "print(p.__file__); print(q.__file__); print(s.__file__);"
        "print(len(q.load_prompt('answer_with_citations').messages))"
    )
    done = subprocess.run(
        [str(python), "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    files = done.stdout.splitlines()[:3]
    assert all(f.startswith(site) for f in files), files
    assert Path(files[0]) == Path(site, "rag_graphs", "ingestion", "pipeline.py")


def test_the_editable_install_resolves_each_module_to_its_real_file() -> None:
    """From outside the checkout (no project folder on the path), the installed package's modules
    are the checkout's own files under ``ingestion/``, ``prompts/`` and ``rag_graphs/``."""
    code = (
        "import rag_graphs.ingestion.pipeline as p, rag_graphs.prompts as q, rag_graphs.store as s;"
        "print(p.__file__); print(q.__file__); print(s.__file__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    pipeline, prompts, store = (Path(line) for line in done.stdout.splitlines())
    assert pipeline == ROOT / "ingestion" / "pipeline.py"
    assert prompts == ROOT / "prompts" / "__init__.py"
    assert store == ROOT / "rag_graphs" / "store" / "__init__.py"
