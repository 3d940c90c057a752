"""A corpus of hostile and broken files, generated at test time (no binary files in the repo).

``make_hostile_corpus(folder, ...)`` writes every file and returns what ingesting
each must give: ``Expect("ok", contains=...)`` (ingested, with a chunk holding
``contains``) or ``Expect("error", error=regex)`` (refused, and the error names
the file and says why). Names are relative to ``folder``; several have spaces
and non-ASCII letters, so every path in every message is a hostile one too.

Decisions the expectations encode:

- Invalid UTF-8 in ``.txt`` is refused (the bytes could be any encoding); in
  ``.md`` Docling decodes it as cp1252 (with a warning): ingested.
- A PNG named ``.md`` is read as the image it is (format by content); ELF bytes
  named ``.md`` are refused as binary.
- HTML and Markdown that reference ``file:///etc/passwd``, a local canary file
  or a URL are ingested without reading or fetching any of them.
- Dangling and looping symlinks are reported as unreadable, not skipped silently.
- ``HANG``: 400 KB of ``[a](`` is quadratic in marko's link parser (about an
  hour of CPU): a genuine input that only the per-file timeout stops.

``make_hostile_paths(base)`` is the other half: hostile *names and links*
(links out of the folder, loops, a FIFO, a device, names with newlines,
quotes, ``%`` and filter syntax), for every way of naming files.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tests import doc_fixtures as fx

BIG_LINE_BYTES = 1_000_000
"""One line of text 15x what Milvus holds in one chunk (65,535 bytes): split to fit, all stored (5 MB
made the suite's slowest unit test spend a minute tokenizing, for the same check)."""
HANG = "hang [a](.md"
TOO_BIG = "too big.md"
ZIP_BOMB_BYTES = 1100 * 2**20  # what word/document.xml unpacks to (written compressed: ~1 MB)


@dataclass(frozen=True)
class Expect:
    """What ingesting one file must give."""

    status: Literal["ok", "error"]
    error: str | None = None  # regex the file's error must match (its name is checked separately)
    contains: str | None = None  # text one of the file's chunks must hold


def make_hostile_corpus(folder: Path, *, remote: str, canary: Path, max_file_bytes: int) -> dict[str, Expect]:
    """Write the corpus into ``folder`` and return the expectation for every file in it.

    Args:
        remote: base URL references point to (a local server that must receive nothing).
        canary: a local file that HTML/Markdown reference and whose content must not be read.
        max_file_bytes: the limit the test ingests with; ``TOO_BIG`` is written just over it.
    """
    folder.mkdir(parents=True, exist_ok=True)
    expect: dict[str, Expect] = {}

    def write(name: str, data: bytes | str, outcome: Expect) -> None:
        path = folder / name
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        expect[name] = outcome

    def error(pattern: str) -> Expect:
        return Expect("error", error=pattern)

    # -- empty, truncated, corrupt, mislabelled --------------------------------------
    write("empty.md", b"", error("file is empty"))
    write("only whitespace.txt", " \n\t\n  \r\n", error("file is empty"))
    pdf = fx.pdf(folder, name="_source.pdf").read_bytes()
    (folder / "_source.pdf").unlink()
    write("truncated.pdf", pdf[: len(pdf) // 3], error("Docling could not convert it"))
    write("corrupt.pdf", b"%PDF-1.7\n" + os.urandom(20_000), error("Docling could not convert it"))
    fx.pdf(folder, name="encrypted.pdf", password="hunter2")
    expect["encrypted.pdf"] = error(r"password-protected")
    write("report.pdf.pdf", "plain text pretending to be a PDF\n", error(r"not a PDF file"))
    write("program.md", b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 40, error("binary data, not text"))
    write("no suffix", "some text\n", error("unsupported file type"))
    write("invalid utf8.txt", b"caf\xe9 cr\xe8me \xff\xfe br\xfbl\xe9e\n" * 20, error("not UTF-8"))

    xlsx = fx.xlsx(folder).read_bytes()
    (folder / "gliders.xlsx").unlink()
    write("truncated.xlsx", xlsx[: len(xlsx) // 2], error("damaged zip archive"))
    write(
        "corrupt.pptx",
        _office_zip({"ppt/presentation.xml": "<p:presentation><not-closed"}),
        error("could not convert it"),
    )
    write("corrupt.docx", _office_zip({"word/document.xml": os.urandom(3000)}), error("could not convert it"))

    # -- resource exhaustion -----------------------------------------------------------
    _zip_bomb(folder / "zip bomb.docx")
    expect["zip bomb.docx"] = error(
        r"zip bomb: part word/document\.xml unpacks to 1153\.4 MB from 1\.1 MB \(10\d\d:1\)"
    )
    nested = "<div>" * 100_000 + "deep" + "</div>" * 100_000
    write("deeply nested.html", f"<html><body>{nested}</body></html>", error(r"nested 100002 levels deep"))
    write(HANG, "[a](" * 100_000, error(r"conversion timed out after \d+ s"))
    write(TOO_BIG, b"# Big\n\n" + b"x" * max_file_bytes, error(r"over the \d+ MB limit"))

    # -- symlinks that lead nowhere ----------------------------------------------------
    os.symlink(folder / "gone.md", folder / "dangling link.md")
    os.symlink(folder / "loop b.md", folder / "loop a.md")
    os.symlink(folder / "loop a.md", folder / "loop b.md")
    expect["dangling link.md"] = error(r"cannot be read \(No such file or directory\)")
    expect["loop a.md"] = expect["loop b.md"] = error(r"cannot be read \(Too many levels of symbolic links\)")

    # -- references the converter must neither read nor fetch ------------------------
    refs = ["file:///etc/passwd", f"file://{canary}", f"{remote}/pixel.png", "http://example.com/x.png"]
    tags = "".join(
        f'<img src="{r}"><a href="{r}">link {i}</a><iframe src="{r}"></iframe>'
        f'<link rel="stylesheet" href="{r}"><script src="{r}"></script>'
        for i, r in enumerate(refs)
    )
    write(
        "references.html",
        f"<html><body><h1>Survey notes</h1><p>The Osprey survey ended in May.</p>{tags}</body></html>",
        Expect("ok", contains="Osprey survey ended"),
    )
    images = "".join(
        f"![picture {i}]({r})\n\n[link {i}]({r})\n\n" for i, r in enumerate([*refs, str(canary)])
    )
    write(
        "references.md",
        f"# Dive log\n\nThe Kestrel dive lasted six hours.\n\n{images}",
        Expect("ok", contains="six hours"),
    )

    # -- good files with hostile shapes and names --------------------------------------
    write(
        "one enormous line.txt",
        " ".join(f"Fix {i}: the glider surfaced and sent its position." for i in range(BIG_LINE_BYTES // 54)),
        Expect("ok", contains=f"Fix {BIG_LINE_BYTES // 54 - 1}: the glider surfaced"),
    )
    write(
        "latin1 café.md",
        "# Café\n\nLe café crème est brûlé.\n".encode("cp1252"),
        Expect("ok", contains="crème"),
    )
    fx.picture(folder / "_picture.png").rename(folder / "picture named.md")
    expect["picture named.md"] = Expect("ok")
    write(
        "ragged.csv",
        "name,depth,range\nKestrel,1000\nPetrel,200,150,extra,cells\n,,\nOsprey\n",
        Expect("ok", contains="Kestrel"),
    )
    _fifty_pages(folder / "fifty pages.pdf")
    expect["fifty pages.pdf"] = Expect("ok", contains="Page 50 of the survey")
    docx = fx.docx(folder)
    docx.rename(folder / "résumé final 2024 ✓.docx")
    expect["résumé final 2024 ✓.docx"] = Expect("ok", contains="Kestrel dives deeper")
    write(
        "日本語 ノート.md",
        "# 観測\n\nグライダーは深さ千メートルまで潜った。\n",
        Expect("ok", contains="グライダー"),
    )
    write(
        'it\'s "quoted" \\ back.md',
        "# Quotes\n\nA name with quotes and a backslash.\n",
        Expect("ok", contains="backslash"),
    )
    sub = folder / "sub dir ünïcode"
    sub.mkdir()
    fx.pptx(sub)
    expect["sub dir ünïcode/results.pptx"] = Expect("ok", contains="14 missions")
    write("empty.html", "<!doctype html><html><head></head><body>  </body></html>", error("no text, table"))
    return expect


OUTSIDE_CANARY = "CANARY-outside-the-root-3f9a"


@dataclass(frozen=True)
class HostilePaths:
    """A folder of hostile names and links (``make_hostile_paths``) and what ingesting it must give.

    Attributes:
        root: the folder to ingest (by folder, glob, include/exclude, CLI or Python).
        stored: names (relative to ``root``) whose text must be stored, with a phrase each holds.
        empty: names that convert but give no chunk (reported as such, not as ingested).
        skipped: names discovery must pass over and report (links out, loops, duplicates, FIFOs).
        outside: a folder beside ``root`` whose files no ingest of ``root`` may read.
    """

    root: Path
    stored: dict[str, str]
    empty: tuple[str, ...]
    skipped: tuple[str, ...]
    outside: Path


def make_hostile_paths(base: Path) -> HostilePaths:
    """Write the hostile-paths tree under ``base`` (the attack from issue 19, and more).

    ``root/`` holds good files with hostile names (a newline, quotes, ``%``, filter
    syntax), a heading-only Markdown file, a file linked twice, links to
    ``/etc/passwd``, ``/dev/zero`` and a folder outside, three links back to the
    root (``loop``, ``l1``, ``l2``: a glob that followed them expands 2^depth
    paths), and a FIFO (reading it blocks forever). ``outside/`` holds a canary.
    """
    root, outside = base / "root", base / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "canary.md").write_text(f"# Canary\n\n{OUTSIDE_CANARY} must never be stored.\n")
    stored = {
        "ok.md": "The Osprey glider surfaced at dawn.",
        "new\nline.md": "A name with a newline in it.",
        'it\'s "quoted".md': "A name with both quotes.",
        "100% sure %s %(x)s.md": "A name with percent signs.",
        'x") or (1==1.md': "A name that is filter syntax.",
        "sub/deeper.md": "The Petrel glider logged salinity.",
    }
    for name, text in stored.items():
        (root / name).write_text(f"# Note\n\n{text}\n")
    (root / "heading only.md").write_text("# Only a heading\n")
    links = {
        "twin.md": root / "ok.md",  # the same file twice: read once
        "sub/twin again.md": root / "ok.md",
        "passwd.md": Path("/etc/passwd"),
        "zero.md": Path("/dev/zero"),
        "outdir": Path("..") / "outside",  # a relative link to a folder out of the root
        "loop": Path("."),
        "l1": Path("."),
        "l2": Path("."),
    }
    for name, target in links.items():
        (root / name).symlink_to(target)
    os.mkfifo(root / "fifo.md")
    return HostilePaths(
        root=root,
        stored=stored,
        empty=("heading only.md",),
        skipped=(*links, "fifo.md"),
        outside=outside,
    )


def _office_zip(parts: dict[str, str | bytes]) -> bytes:
    """An Office-looking zip (content types + the given parts), built in memory."""
    from io import BytesIO

    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types/>')
        for name, data in parts.items():
            z.writestr(name, data)
    return buffer.getvalue()


def _zip_bomb(path: Path) -> None:
    """A valid-looking DOCX whose document.xml really unpacks to ``ZIP_BOMB_BYTES`` (of spaces).

    Written compressed, block by block: about 1 MB on disk, a few seconds to make.
    """
    head = b'<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/'
    head += b'wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>'
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types/>')
        z.writestr("word/_rels/document.xml.rels", '<?xml version="1.0"?><Relationships/>')
        with z.open("word/document.xml", "w", force_zip64=True) as part:
            tail = b"</w:t></w:r></w:p></w:body></w:document>"
            spaces = ZIP_BOMB_BYTES - len(head) - len(tail)
            block = b" " * 2**20
            part.write(head)
            for _ in range(spaces // len(block)):
                part.write(block)
            part.write(block[: spaces % len(block)] + tail)


def _fifty_pages(path: Path) -> None:
    """A 50-page text PDF; page ``n`` says ``Page n of the survey``."""
    from fpdf import FPDF

    doc = FPDF()
    doc.set_font("Helvetica", size=11)
    for n in range(1, 51):
        doc.add_page()
        doc.multi_cell(0, 6, f"Page {n} of the survey. " + "The glider logged depth and salinity. " * 30)
    doc.output(str(path))


def worker_overhead(folder: Path, rounds: int = 3) -> dict[str, float]:
    """Seconds to ingest 10 small files converted in this process and in the worker process.

    Best of ``rounds`` each, alternating, after one warm-up run of each (the worker's starts the
    forkserver and the worker). Run it with ``python -m tests.hostile_corpus``.
    """
    import time

    from langchain_core.embeddings import DeterministicFakeEmbedding

    from rag_graphs.ingestion import IngestOptions, ingest
    from rag_graphs.store import ChunkIndex

    folder.mkdir(parents=True, exist_ok=True)
    for make in (fx.docx, fx.xlsx, fx.pptx, fx.html, fx.pdf):
        make(folder)
    for i in range(5):
        (folder / f"note {i}.md").write_text(f"# Note {i}\n\nThe glider logged dive {i} at dawn.\n")
    index = ChunkIndex(
        uri=str(folder / ".store.db"), collection="overhead", embeddings=DeterministicFakeEmbedding(size=32)
    )

    def run(timeout: float | None) -> float:
        start = time.perf_counter()
        report = ingest([folder], index=index, options=IngestOptions(progress=False, timeout=timeout))
        assert len(report.ok) == 10, report.summary()
        return time.perf_counter() - start

    first_here = run(None)
    startup = run(300.0)
    times: dict[float | None, list[float]] = {None: [], 300.0: []}
    for _ in range(rounds):
        for timeout in times:
            times[timeout].append(run(timeout))
    here, worker = min(times[None]), min(times[300.0])
    return {
        "in_process": here,
        "worker": worker,
        "ratio": worker / here,
        "first_in_process_run": first_here,
        "first_worker_run": startup,
    }


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        result = worker_overhead(Path(tmp) / "overhead")
    print(", ".join(f"{k}={v:.3f}" for k, v in result.items()))
