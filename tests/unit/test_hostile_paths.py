"""Hostile paths through every way of naming files: nothing outside the root is read.

The tree is ``tests.hostile_corpus.make_hostile_paths``: links to ``/etc/passwd``,
``/dev/zero`` and a folder outside, three links back to the root, a file linked
twice, a FIFO, and good files whose names hold a newline, quotes, ``%`` and
filter syntax. Whether it is named as a folder, a quoted glob (absolute or
relative), with ``include``/``exclude``, or on the command line, the store gains
exactly the good files, once each, and the report names what was skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.store import ChunkIndex
from tests.hostile_corpus import OUTSIDE_CANARY, HostilePaths, make_hostile_paths

PASSWD_LINE = "root:x:0:0"


@pytest.fixture
def tree(tmp_path: Path) -> HostilePaths:
    return make_hostile_paths(tmp_path)


def _stored_sources(index: ChunkIndex) -> dict[str, int]:
    return {source: sum(kinds.values()) for source, kinds in index.sources().items()}


def _texts(index: ChunkIndex) -> str:
    return "\n".join(doc.page_content for doc, _ in index.iter_chunks())


def _ingest_checked(index: ChunkIndex, paths: list[str | Path], **settings) -> tuple[set[str], str]:
    """Ingest; check nothing from outside was stored and "new" is what the store gained.
    Returns the stored sources and the report's summary."""
    before = index.count()
    report = ingest(paths, index=index, options=IngestOptions(progress=False, timeout=None, **settings))
    text = _texts(index)
    assert OUTSIDE_CANARY not in text and PASSWD_LINE not in text
    assert report.added == index.count() - before, report.summary()  # "new" is what the store gained
    return set(_stored_sources(index)), report.summary()


def _names(tree: HostilePaths, sources: set[str]) -> set[str]:
    root = tree.root.resolve()
    assert all(Path(s).is_relative_to(root) for s in sources), sources
    return {Path(s).relative_to(root).as_posix() for s in sources}


@pytest.mark.timeout(60)  # the globs used to expand the tree's self-links for ever
@pytest.mark.parametrize("form", ["folder", "absolute glob", "relative glob", "dot-star glob"])
def test_every_way_of_naming_the_tree_stores_exactly_its_good_files(tree, index, form, monkeypatch):
    monkeypatch.chdir(tree.root.parent)
    path = {
        "folder": tree.root,
        "absolute glob": f"{tree.root}/**/*.md",
        "relative glob": "root/**/*.md",
        "dot-star glob": "root/**/*",
    }[form]
    sources, summary = _ingest_checked(index, [path])
    assert _names(tree, sources) == set(tree.stored)
    assert summary.startswith(f"{len(tree.stored)} file(s) ingested, 0 failed, 1 without text, ")
    assert "NO CHUNKS" in summary and "heading only.md" in summary
    skipped = [line for line in summary.splitlines() if line.startswith("  SKIPPED ")]
    assert len(skipped) == len(tree.skipped), summary
    for name in tree.skipped:
        assert any(f"/{name}: " in line for line in skipped), (name, summary)
    assert "same file as" in summary and "outside" in summary and "not a regular file" in summary


@pytest.mark.timeout(60)
def test_include_and_exclude_patterns_keep_the_same_policy(tree, index):
    sources, _ = _ingest_checked(index, [tree.root], include=["*.md"], exclude=["sub/*"])
    assert _names(tree, sources) == set(tree.stored) - {"sub/deeper.md"}
    one_level, _ = _ingest_checked(index, [f"{tree.root}/*.md"])
    assert _names(tree, one_level) == set(tree.stored) - {"sub/deeper.md"}  # one level only


def test_the_same_file_named_twice_is_read_once(tree, index):
    ok = tree.root / "ok.md"
    sources, summary = _ingest_checked(index, [ok, ok, tree.root / "twin.md", tree.root / "sub"])
    assert _names(tree, sources) == {"ok.md", "sub/deeper.md"}
    assert summary.startswith("2 file(s) ingested") and summary.count("same file as") == 2
    assert "twin again.md: a symlink to" in summary  # sub's link to ok.md leads out of sub


def test_glob_root_is_the_part_before_the_first_wildcard():
    from rag_graphs.ingestion.convert.discover import split_glob

    assert split_glob(Path("/data/docs/**/*.md")) == (Path("/data/docs"), ("**", "*.md"))
    assert split_glob(Path("r*/x.md")) == (Path("."), ("r*", "x.md"))
    assert split_glob(Path("a/b[12]/c")) == (Path("a"), ("b[12]", "c"))


@pytest.mark.timeout(30)
def test_two_self_links_do_not_expand_a_glob(tmp_path):
    """Before: glob.glob followed l1 and l2 into 2^depth paths and never returned."""
    from rag_graphs.ingestion.convert.discover import discover

    deep = tmp_path / "a" / "b" / "c" / "d"
    deep.mkdir(parents=True)
    (deep / "x.md").write_text("# X\n\nx.\n")
    for name in ("l1", "l2"):
        (tmp_path / name).symlink_to(".")
        (deep / name).symlink_to(tmp_path)
    found = list(discover([f"{tmp_path}/**/*.md"]))  # the timeout mark catches a walk that never ends
    assert found == [deep / "x.md"]


def test_following_links_is_an_opt_in_that_still_never_loops_or_reads_a_device(tree, index):
    report = ingest(
        [tree.root], index=index, options=IngestOptions(progress=False, timeout=None, follow_links=True)
    )
    summary = report.summary()
    assert str((tree.outside / "canary.md").resolve()) in _stored_sources(index)
    assert "zero.md: not a regular file" in summary  # /dev/zero: refused, not read for ever
    assert "a link back to" in summary  # loop, l1, l2: one walk of the root


def test_a_fifo_named_explicitly_is_refused_not_read(tree, index):
    report = ingest([tree.root / "fifo.md"], index=index, options=IngestOptions(progress=False, timeout=None))
    assert report.failed and "not a regular file" in (report.failed[0].error or "")


def test_the_reported_glob_attack_from_the_command_line(tmp_path, monkeypatch):
    """Issue 19's attack as typed: ``rag-graphs ingest "DIR/**/*.md"`` with the embedded model."""
    from rag_graphs import cli

    folder, outside = tmp_path / "dir", tmp_path / "outside"
    folder.mkdir(), outside.mkdir()
    (folder / "ok.md").write_text("# Ok\n\nThe glider surfaced at dawn.\n")
    (outside / "canary.md").write_text(f"# Canary\n\n{OUTSIDE_CANARY}\n")
    (folder / "passwd.md").symlink_to("/etc/passwd")
    (folder / "outdir").symlink_to(Path("..") / "outside")
    (folder / "loop").symlink_to(".")
    store = str(tmp_path / "cli.db")
    result = CliRunner().invoke(cli.app, ["ingest", f"{folder}/**/*.md", "--store", store, "--timeout", "0"])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())  # rich wraps long lines
    assert "1 file(s) ingested, 0 failed" in output and "1 new" in output, output
    assert "1 chunks in the store" in output
    assert "passwd.md: a symlink to /etc/passwd" in output
