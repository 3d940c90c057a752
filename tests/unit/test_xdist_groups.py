"""``make test``'s ``--dist loadgroup`` keeps each ``xdist_group`` file on one worker.

On pytest 9.2 with xdist 3.8 the groups were silently ignored (``tests/xdist_groups.py``), and a
server file spread over both workers started its server twice. A small suite of its own, run
the way ``make test`` runs, shows where each test ran.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEST = """
import os, time, pytest
{mark}
@pytest.mark.parametrize("i", range(6))
def test_where(i):
    time.sleep(0.1)
    with open({log!r}, "a") as f:
        f.write("{name} " + os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""


def test_a_grouped_file_runs_on_one_worker_and_the_others_spread(tmp_path):
    log = tmp_path / "where.log"
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text("from tests.xdist_groups import pytest_collection_modifyitems\n")
    for name in ("a", "b", "c", "d"):
        mark = f'pytestmark = pytest.mark.xdist_group("{name}")' if name in "ab" else ""
        (suite / f"test_{name}.py").write_text(TEST.format(mark=mark, log=str(log), name=name))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "xdist", "-n", "2", "--dist", "loadgroup", str(suite)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workers: dict[str, set[str]] = defaultdict(set)
    for line in log.read_text().splitlines():
        name, worker = line.split()
        workers[name].add(worker)
    assert len(workers["a"]) == len(workers["b"]) == 1, dict(workers)
    assert workers["c"] | workers["d"] == {"gw0", "gw1"}, dict(workers)  # both workers did work
