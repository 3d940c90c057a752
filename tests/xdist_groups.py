"""``--dist loadgroup`` on pytest 9.2: the hook that makes xdist's groups take effect.

A test file marked ``xdist_group`` (one whose module- or session-scoped server or store is slow
to set up) should run on one worker, which sets it up once. ``tests/conftest.py`` imports the
hook; ``tests/unit/test_xdist_groups.py`` checks it on a small suite of its own.
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]):
    """Keep ``--dist loadgroup``'s groups on pytest 9.2.

    xdist 3.8 names a grouped item ``<nodeid>@<group>`` by setting ``item._nodeid``, but pytest 9.2
    builds ``nodeid`` from ``item._id``, so the scheduler never saw a group and spread every file
    over both workers (each then started the file's server). Set the id the scheduler reads from
    the name xdist wrote; without xdist, or without ``loadgroup``, nothing changes."""
    result = yield
    grouped = [
        (item, written)
        for item in items
        if isinstance(written := item.__dict__.get("_nodeid"), str) and written.startswith(item.nodeid + "@")
    ]
    if grouped:  # pytest 9.2 and later: earlier ones read ``_nodeid`` itself
        from _pytest.nodeid import NodeId

        for item, written in grouped:
            item._id = NodeId.parse(written)
    return result
