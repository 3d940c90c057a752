"""Section expansion: a hit brings the other chunks under its own Docling heading path, from a
real Markdown file through the real ingestion, in reading order, within the budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_graphs.config.context import RagContext
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.search.neighbours import SectionExpander, expander_for
from rag_graphs.store import ChunkIndex

FILLER = "The {n}th paragraph of {part} explains step {n} of the {part} work in plain detail."


def manual(folder: Path) -> Path:
    """A manual whose long sections split into several chunks each (HybridChunker's token bound)."""
    lines = ["# Pump manual", "", "Intro text about the pump.", ""]
    for part in ("Installation", "Maintenance"):
        lines += [f"## {part}", ""]
        lines += [FILLER.format(n=n, part=part.lower()) + "\n" for n in range(1, 41)]
    lines += ["## Appendix", "", "### Installation", "", "A different installation section.", ""]
    path = folder / "manual.md"
    path.write_text("\n".join(lines))
    return path


@pytest.fixture
def sections(tmp_path: Path, index: ChunkIndex) -> ChunkIndex:
    ingest([manual(tmp_path)], index=index, options=IngestOptions(progress=False))
    return index


def chunks_under(index: ChunkIndex, path: list[str]):
    rows = index.where('source != ""', limit=1000)
    under = [d for d in rows if d.metadata["headings"] == path]
    return sorted(under, key=lambda d: d.metadata["chunk_index"])


def test_a_hit_brings_its_whole_section_in_reading_order(sections: ChunkIndex) -> None:
    install = chunks_under(sections, ["Pump manual", "Installation"])
    assert len(install) >= 3, "the fixture must split a section into several chunks"
    hit = install[1]
    grown, added = SectionExpander(sections, 0, 100_000).expand([hit])
    assert grown[0].id == hit.id
    assert added == [str(d.id) for d in install if d.id != hit.id]  # all of it, reading order
    assert all(d.metadata["expanded_from"] == hit.id for d in grown[1:])
    # neither the sibling section nor the nested "Appendix > Installation" came along
    assert all(d.metadata["headings"] == ["Pump manual", "Installation"] for d in grown)


def test_the_budget_keeps_the_nearest_chunks(sections: ChunkIndex) -> None:
    install = chunks_under(sections, ["Pump manual", "Installation"])
    hit = install[-1]
    one = len(install[-2].page_content) // 4
    _, added = SectionExpander(sections, 0, one).expand([hit])
    assert added == [str(install[-2].id)]  # the chunk just before the hit, nothing further away
    _, none_added = SectionExpander(sections, 0, 1).expand([hit])
    assert none_added == []


def test_a_section_already_in_the_ranking_is_not_added_twice(sections: ChunkIndex) -> None:
    install = chunks_under(sections, ["Pump manual", "Installation"])
    grown, added = SectionExpander(sections, 0, 100_000).expand(install[:2])
    assert len({d.id for d in grown}) == len(grown) == len(install)
    assert str(install[0].id) not in added and str(install[1].id) not in added


def test_the_spec_is_accepted_and_builds_the_section_expander(index: ChunkIndex) -> None:
    assert RagContext(expand=" Section ").expand == "section"
    assert isinstance(expander_for("section", index, 10), SectionExpander)
