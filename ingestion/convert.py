"""Find input files, tell their format by content, and convert them to ``DoclingDocument``s.

Formats: PDF, DOCX, PPTX, XLSX, HTML, Markdown, plain text, AsciiDoc, CSV and
images (PNG, JPEG, TIFF). The format comes from the bytes (magic numbers, the
parts inside an Office zip), not from the name alone: a PDF called
``report.docx`` is read as a PDF, and binary data called ``notes.md`` is an
error naming the file. Conversion errors are reported per file, never raised
for the batch.

Hostile input: Docling runs in a worker process with a per-file timeout
(``ConvertOptions.timeout``), so a file that sends it into a loop (a 400 KB
Markdown file of ``[a](`` is an hour of marko's link parsing) or crashes it
costs one error, not the ingest. Office zips whose parts unpack to absurd sizes
(zip bombs), HTML nested deeper than Docling's recursive reader can walk, and
files that cannot be read (dangling or looping symlinks) are refused up front.
Plain ``.txt`` must be UTF-8 (refused otherwise: its bytes could be any
encoding); Markdown, CSV and AsciiDoc that are not UTF-8 are decoded as cp1252
by Docling, with a warning.
"""

from __future__ import annotations

import atexit
import contextlib
import fnmatch
import logging
import os
import shutil
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from docling.datamodel.base_models import InputFormat

if TYPE_CHECKING:
    from pebble import ProcessPool

log = logging.getLogger(__name__)

# Suffix -> Docling input format, for the text formats a file's bytes cannot tell apart.
SUPPORTED: dict[str, InputFormat] = {
    ".md": InputFormat.MD,
    ".markdown": InputFormat.MD,
    ".txt": InputFormat.MD,  # read by _text_document, not by the Markdown parser
    ".html": InputFormat.HTML,
    ".htm": InputFormat.HTML,
    ".xhtml": InputFormat.HTML,
    ".adoc": InputFormat.ASCIIDOC,
    ".asciidoc": InputFormat.ASCIIDOC,
    ".csv": InputFormat.CSV,
    ".pdf": InputFormat.PDF,
    ".docx": InputFormat.DOCX,
    ".pptx": InputFormat.PPTX,
    ".xlsx": InputFormat.XLSX,
    ".png": InputFormat.IMAGE,
    ".jpg": InputFormat.IMAGE,
    ".jpeg": InputFormat.IMAGE,
    ".tif": InputFormat.IMAGE,
    ".tiff": InputFormat.IMAGE,
}
_BINARY_MAGIC: list[tuple[bytes, InputFormat]] = [
    (b"%PDF-", InputFormat.PDF),
    (b"\x89PNG\r\n\x1a\n", InputFormat.IMAGE),
    (b"\xff\xd8\xff", InputFormat.IMAGE),
    (b"II*\x00", InputFormat.IMAGE),
    (b"MM\x00*", InputFormat.IMAGE),
]
# Office Open XML files are zips; the folder of their main part names the format.
_ZIP_PARTS = {"word/": InputFormat.DOCX, "ppt/": InputFormat.PPTX, "xl/": InputFormat.XLSX}


class UnsupportedFormatError(ValueError):
    """The file's type is not one this version ingests."""


def discover(
    paths: Iterable[str | Path], exclude: Iterable[str] = (), include: Iterable[str] = ()
) -> Iterator[Path]:
    """Yield the files under ``paths`` (folders recurse; hidden files are skipped).

    A path may be a glob (``reports/**/*.pdf``). ``include`` keeps only files
    matching one of its patterns, ``exclude`` drops files matching one of its
    patterns; patterns match the path relative to the folder given, or the
    file name. A path (or glob) that matches nothing raises ``FileNotFoundError``
    naming it, before anything is ingested.
    """
    import glob

    keep, drop = list(include), list(exclude)

    def matches(rel: Path, name: str, patterns: list[str]) -> bool:
        return any(fnmatch.fnmatch(str(rel), pat) or fnmatch.fnmatch(name, pat) for pat in patterns)

    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists() and glob.has_magic(str(path)):
            found = sorted(Path(p) for p in glob.glob(str(path), recursive=True) if Path(p).is_file())
            if not found:
                raise FileNotFoundError(f"no file matches {path}")
            roots = [(f, Path(f.name)) for f in found]
        elif not path.exists():
            raise FileNotFoundError(f"no such file or folder: {path}")
        elif path.is_file():
            roots = [(path, Path(path.name))]
        else:  # broken symlinks (dangling, looping) are kept: convert reports them by name
            roots = [
                (f, f.relative_to(path))
                for f in sorted(path.rglob("*"))
                if (f.is_file() or _broken(f)) and _inside(f, path)
            ]
        for f, rel in roots:
            if any(part.startswith(".") for part in rel.parts):
                continue
            if keep and not matches(rel, f.name, keep):
                continue
            if matches(rel, f.name, drop):
                continue
            yield f


def _inside(file: Path, folder: Path) -> bool:
    """False (and logged) for a symlink in ``folder`` that leads outside it: a folder of
    documents must not pull in ``/etc/passwd`` or another user's files through a link."""
    if not file.is_symlink() or _broken(file):
        return True
    if file.resolve().is_relative_to(folder.resolve()):
        return True
    log.warning("skipping %s: a symlink to %s, outside %s", file, file.resolve(), folder)
    return False


def _broken(path: Path) -> bool:
    """A symlink whose target is missing or loops (skipping it silently would hide a lost file)."""
    return path.is_symlink() and not path.exists()


def check_supported(path: Path) -> InputFormat:
    """The Docling format for ``path`` by its suffix, or ``UnsupportedFormatError`` naming it."""
    fmt = SUPPORTED.get(path.suffix.lower())
    if fmt is None:
        raise UnsupportedFormatError(
            f"{path}: unsupported file type {path.suffix or '(no suffix)'!r}; "
            f"this version ingests {', '.join(sorted(SUPPORTED))}"
        )
    return fmt


def detect_format(path: Path, data: bytes) -> InputFormat:
    """The Docling format of ``data`` (the bytes of ``path``), by content first.

    Binary formats are recognised by their magic numbers whatever the file is
    called; text formats (which bytes cannot tell apart) by the suffix, after
    checking the bytes really are text.

    Raises:
        UnsupportedFormatError: neither the content nor the suffix is a supported format,
            or a text suffix holds binary data.
    """
    for magic, fmt in _BINARY_MAGIC:
        if data.startswith(magic):
            return fmt
    if data.startswith(b"PK\x03\x04"):
        import zipfile

        try:
            names = zipfile.ZipFile(BytesIO(data)).namelist()
        except zipfile.BadZipFile as exc:
            raise UnsupportedFormatError(f"{path}: a damaged zip archive ({exc})") from exc
        for prefix, fmt in _ZIP_PARTS.items():
            if any(n.startswith(prefix) for n in names):
                return fmt
        raise UnsupportedFormatError(f"{path}: a zip archive that is not a DOCX, PPTX or XLSX file")
    fmt = check_supported(path)
    if fmt in (InputFormat.PDF, InputFormat.DOCX, InputFormat.PPTX, InputFormat.XLSX, InputFormat.IMAGE):
        raise UnsupportedFormatError(
            f"{path}: named {path.suffix} but its content is not a {fmt.value.upper()} file "
            "(truncated, corrupt or mislabelled)"
        )
    if b"\x00" in data[:8192]:
        raise UnsupportedFormatError(f"{path}: named {path.suffix} but holds binary data, not text")
    return fmt


MAX_FILE_BYTES = 100 * 1024 * 1024
TIMEOUT_SECONDS = 300.0
MAX_UNZIPPED_BYTES = 1024**3  # an Office file's parts may unpack to at most this (and 20x the file limit)
MAX_ZIP_RATIO = 200  # ... and no part over 50 MB may unpack to more than 200x its packed size
MAX_HTML_DEPTH = 256  # Docling's HTML reader recurses per level (RecursionError at ~450, quadratic before)


@dataclass(frozen=True)
class ConvertOptions:
    """How files are converted.

    ``allow_fetch`` lets HTML and Markdown load the images they reference from
    the network or the disk; off by default, because a document that makes the
    ingesting machine fetch ``http://169.254.169.254/...`` or read
    ``file:///etc/passwd`` is a server-side request forgery / local file
    disclosure hole. Inline ``data:`` images are always read.
    """

    allow_fetch: bool = False
    max_file_bytes: int = MAX_FILE_BYTES
    # Seconds one file may take in Docling, which then runs in a worker process (killed and
    # replaced when over); None converts in this process, with no limit.
    timeout: float | None = TIMEOUT_SECONDS
    max_pages: int | None = None
    pdf_pipeline: Literal["auto", "standard", "native"] = "auto"
    docling_serve: str | None = None  # base URL of a Docling Serve instance that converts instead


_warned_native = False


def layout_models_present() -> bool:
    """True when Docling's layout model is on this machine (artifacts path or Hugging Face cache).

    Checked without any network access, so an offline machine learns in
    milliseconds that the standard PDF pipeline cannot run, instead of
    blocking on a download attempt.
    """
    from docling.datamodel.pipeline_options import LayoutObjectDetectionOptions
    from docling.datamodel.settings import settings

    spec = LayoutObjectDetectionOptions().model_spec
    if settings.artifacts_path is not None:
        return (Path(settings.artifacts_path) / spec.repo_id.replace("/", "--")).is_dir()
    from huggingface_hub import snapshot_download

    try:
        snapshot_download(spec.repo_id, revision=spec.revision, local_files_only=True)
    except Exception:  # LocalEntryNotFoundError and friends: not cached
        return False
    return True


def _table_models_importable() -> bool:
    import importlib.util

    return importlib.util.find_spec("docling_ibm_models") is not None


def _pdf_option(options: ConvertOptions):
    """The standard PDF pipeline when its models are here, else the native one (with one warning)."""
    global _warned_native
    from docling.datamodel.pipeline_options import NativePdfPipelineOptions, PdfPipelineOptions
    from docling.document_converter import NativePdfFormatOption, PdfFormatOption

    standard = options.pdf_pipeline == "standard" or (
        options.pdf_pipeline == "auto" and layout_models_present()
    )
    if standard:
        pipeline = PdfPipelineOptions(
            do_table_structure=_table_models_importable(),
            do_ocr=shutil.which("tesseract") is not None,
            generate_picture_images=True,
            images_scale=2.0,
        )
        if pipeline.do_ocr:
            from docling.datamodel.pipeline_options import TesseractCliOcrOptions

            pipeline.ocr_options = TesseractCliOcrOptions(lang=["eng"])
        return PdfFormatOption(pipeline_options=pipeline)
    if not _warned_native:
        _warned_native = True
        log.warning(
            "Docling's layout models are not on this machine: PDFs are read with the native "
            "pipeline (text lines with page numbers and embedded pictures; no headings, no table "
            "structure, no OCR of scanned pages). For the full pipeline install "
            "'rag-graphs[layout]' and fetch the models once with `docling-tools models download` "
            "(or set DOCLING_ARTIFACTS_PATH to a folder holding them)."
        )
    native = NativePdfPipelineOptions(
        parser_threads=1, generate_page_images=False, generate_picture_images=True
    )
    return NativePdfFormatOption(pipeline_options=native)


@lru_cache(maxsize=4)
def converter(options: ConvertOptions = ConvertOptions()):
    """One Docling converter per options (it caches its pipelines)."""
    from docling.datamodel.backend_options import HTMLBackendOptions, MarkdownBackendOptions
    from docling.document_converter import DocumentConverter, HTMLFormatOption, MarkdownFormatOption

    fetch = {
        "fetch_images": True,  # data: URIs; remote and local only with the two flags below
        "enable_remote_fetch": options.allow_fetch,
        "enable_local_fetch": options.allow_fetch,
    }
    return DocumentConverter(
        allowed_formats=sorted(set(SUPPORTED.values()) - {InputFormat.IMAGE}, key=str),
        format_options={
            InputFormat.PDF: _pdf_option(options),
            InputFormat.HTML: HTMLFormatOption(backend_options=HTMLBackendOptions(**fetch)),
            InputFormat.MD: MarkdownFormatOption(backend_options=MarkdownBackendOptions(**fetch)),
        },
    )


def convert(path: Path, options: ConvertOptions = ConvertOptions()):
    """Convert one file to a ``DoclingDocument``.

    Docling runs in a worker process when ``options.timeout`` is set (see ``_in_worker``).

    Raises:
        UnsupportedFormatError: the content is no supported format (the message says why).
        ValueError: the file is empty, too large, unreadable, a zip bomb, nested too deep,
            took longer than ``options.timeout``, or Docling could not read it (corrupt,
            truncated, password-protected); the message names the file.
    """
    try:
        size = path.stat().st_size
        if size > options.max_file_bytes:
            raise ValueError(
                f"{path}: {size / 1e6:.1f} MB is over the {options.max_file_bytes / 1e6:.0f} MB limit "
                "(raise it with --max-file-mb)"
            )
        data = path.read_bytes()
    except OSError as exc:  # a dangling or looping symlink, a permission, a file gone meanwhile
        raise ValueError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    if not data.strip():
        raise ValueError(f"{path}: file is empty")
    fmt = detect_format(path, data)
    if fmt in (InputFormat.DOCX, InputFormat.PPTX, InputFormat.XLSX):
        _check_zip(path, data, min(MAX_UNZIPPED_BYTES, 20 * options.max_file_bytes))
    if path.suffix.lower() == ".txt" and fmt is InputFormat.MD:
        return _text_document(path, data)
    if options.docling_serve:
        return convert_remote(path, data, options.docling_serve)
    if options.timeout is None:
        return _convert_here(path, data, fmt, options)
    return _in_worker(path, data, fmt, options)


def _convert_here(path: Path, data: bytes, fmt: InputFormat, options: ConvertOptions):
    """Convert ``data`` (already read and checked) in this process: an image, or Docling."""
    from docling.datamodel.base_models import ConversionStatus, DocumentStream

    if fmt is InputFormat.IMAGE:
        return _image_document(path, data)
    if fmt is InputFormat.HTML and (depth := _html_depth(data)) > MAX_HTML_DEPTH:
        raise ValueError(
            f"{path}: HTML nested {depth} levels deep (the limit is {MAX_HTML_DEPTH}; unclosed tags nest too)"
        )
    # The stream is named with the detected format's suffix, so Docling reads what we detected.
    name = path.name if SUPPORTED.get(path.suffix.lower()) is fmt else f"{path.stem}.{_SUFFIX[fmt]}"
    kwargs = {"max_num_pages": options.max_pages} if options.max_pages else {}
    try:
        result = converter(options).convert(
            DocumentStream(name=name, stream=BytesIO(data)), raises_on_error=False, **kwargs
        )
    except ImportError as exc:  # a format's optional dependency is missing
        raise ValueError(f"{path}: {exc}") from exc
    if result.status not in (ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS):
        errors = "; ".join(e.error_message for e in result.errors) or str(result.status)
        hint = " (password-protected?)" if fmt is InputFormat.PDF and _encrypted(data) else ""
        raise ValueError(f"{path}: Docling could not convert it{hint} ({errors})")
    doc = result.document
    if not (doc.texts or doc.tables or doc.pictures):  # reported, not counted as ingested
        raise ValueError(f"{path}: no text, table or picture found in it (nothing to index)")
    return doc


def _check_zip(path: Path, data: bytes, limit: int) -> None:
    """Refuse an Office zip whose parts would unpack to absurd sizes (a zip bomb).

    The sizes a zip declares can be trusted for reading: ``zipfile`` stops at
    the declared size (and checks the CRC), so what Docling would unpack is bounded by them.
    """
    import zipfile

    infos = zipfile.ZipFile(BytesIO(data)).infolist()
    for info in infos:
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > 50e6 and ratio > MAX_ZIP_RATIO:
            raise ValueError(
                f"{path}: refused as a zip bomb: part {info.filename} unpacks to {_size(info.file_size)} "
                f"from {_size(info.compress_size)} ({ratio:.0f}:1)"
            )
    total = sum(info.file_size for info in infos)
    if total > limit:
        largest = max(infos, key=lambda info: info.file_size)
        raise ValueError(
            f"{path}: refused as a zip bomb: its parts unpack to {_size(total)}, over the {_size(limit)} "
            f"limit (largest: {largest.filename}, {_size(largest.file_size)})"
        )


def _size(n: float) -> str:
    """``n`` bytes, readable in a message."""
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"


def _html_depth(data: bytes) -> int:
    """How deep the tree Docling's HTML reader walks (same parser) is nested, without recursion."""
    from bs4 import BeautifulSoup, Tag

    deepest, stack = 0, [(BeautifulSoup(data, "html.parser"), 0)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in node.children if isinstance(child, Tag))
    return deepest


# -- the worker process -------------------------------------------------------------
# A thread cannot be stopped, so a file that hangs Docling would hang ingest: Docling runs
# in one worker process, started on first use and kept across files and ingest calls
# (forkserver: a clean, single-threaded parent that has imported Docling once, so a worker
# killed for its timeout is replaced in well under a second).

_pool: ProcessPool | None = None
_pool_lock = threading.Lock()


def _in_worker(path: Path, data: bytes, fmt: InputFormat, options: ConvertOptions):
    """``_convert_here`` in the worker process, killed (and replaced) after ``options.timeout`` s."""
    from concurrent.futures.process import BrokenProcessPool

    from pebble import ProcessExpired

    try:
        future = _worker_pool().schedule(_convert_there, (path, data, fmt, options), timeout=options.timeout)
    except (AssertionError, OSError, BrokenProcessPool) as exc:  # no child process can start here:
        # a daemon process (a Celery worker...), a raw os.fork() child, no file descriptors left
        log.warning("converting %s in this process, with no timeout: %r", path, exc)
        return _convert_here(path, data, fmt, options)
    try:
        return future.result()
    except TimeoutError:
        raise ValueError(f"{path}: conversion timed out after {options.timeout:g} s") from None
    except ProcessExpired as exc:  # killed by the OS (out of memory), or a crash in native code
        raise ValueError(f"{path}: the converter process died (exit code {exc.exitcode})") from None
    except BrokenProcessPool as exc:  # the worker died starting: most often an unguarded script
        raise ValueError(
            f"{path}: the converter process could not start ({exc}); a script that ingests must "
            "run under `if __name__ == '__main__':` (the worker imports the main module)"
        ) from None


def _convert_there(path: Path, data: bytes, fmt: InputFormat, options: ConvertOptions):
    """The worker's task: any error comes back as a ValueError naming the file (always picklable)."""
    try:
        return _convert_here(path, data, fmt, options)
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - RecursionError, MemoryError, a backend's own error
        raise ValueError(f"{path}: {type(exc).__name__}: {exc}") from None


def _worker_pool() -> ProcessPool:
    """The worker pool (one process), created on first use and stopped at exit."""
    global _pool
    import multiprocessing

    from pebble import ProcessPool

    with _pool_lock:
        if _pool is None or not _pool.active:
            if "forkserver" in multiprocessing.get_all_start_methods():
                context = multiprocessing.get_context("forkserver")
                context.set_forkserver_preload([__name__, "docling.document_converter"])
            else:
                context = multiprocessing.get_context("spawn")
            if _pool is None:
                atexit.register(_stop_pool)
            _pool = ProcessPool(
                max_workers=1, initializer=_worker_init, initargs=(os.getpid(),), context=context
            )
        return _pool


def _stop_pool() -> None:
    if _pool is not None:
        _pool.stop()
        with contextlib.suppress(Exception):  # a worker that will not die is killed by pebble's own atexit
            _pool.join(timeout=10)


def _forget_pool() -> None:
    """In a forked child: the pool object came along, its worker and threads did not."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forget_pool)


def _worker_init(owner: int) -> None:
    """In each new worker: import Docling before any file's clock starts; exit when orphaned.

    A worker outlives an ingesting process killed with ``kill -9`` (and keeps the forkserver
    alive): it would finish a hanging file, for hours. A daemon thread ends it once ``owner``,
    the process that schedules the work, is gone.
    """
    import docling.document_converter  # noqa: F401

    def watch() -> None:
        while True:
            time.sleep(1.0)
            try:
                os.kill(owner, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:  # alive, under another user id
                pass

    threading.Thread(target=watch, name="orphan-watch", daemon=True).start()


def convert_remote(path: Path, data: bytes, url: str, *, timeout: float = 600.0):
    """Convert with a Docling Serve instance (``POST /v1/convert/file``, DoclingDocument JSON back).

    For machines without Docling's models, or conversion at scale: the server
    runs the full pipelines (layout, tables, OCR, picture images embedded in
    the JSON) and chunking, captioning and provenance stay here, unchanged.
    ``DOCLING_SERVE_API_KEY`` is sent as ``X-Api-Key`` when set.
    """
    import os

    import httpx
    from docling_core.types.doc import DoclingDocument

    endpoint = url.rstrip("/") + "/v1/convert/file"
    headers = {"X-Api-Key": key} if (key := os.environ.get("DOCLING_SERVE_API_KEY")) else {}
    form = {"to_formats": "json", "image_export_mode": "embedded"}
    try:
        response = httpx.post(
            endpoint, files={"files": (path.name, data)}, data=form, headers=headers, timeout=timeout
        )
    except httpx.HTTPError as exc:
        raise ValueError(f"{path}: Docling Serve at {url} is unreachable ({exc})") from exc
    if response.status_code != 200:
        raise ValueError(f"{path}: Docling Serve answered HTTP {response.status_code}: {response.text[:300]}")
    body = response.json()
    document = (body.get("document") or {}).get("json_content")
    if body.get("status") not in ("success", "partial_success") or not document:
        errors = "; ".join(e.get("error_message", "") for e in body.get("errors") or [])
        raise ValueError(f"{path}: Docling Serve could not convert it ({errors or body.get('status')})")
    return DoclingDocument.model_validate(document)


# The first suffix SUPPORTED lists for each format (reversed, so earlier entries win).
_SUFFIX = {fmt: suffix[1:] for suffix, fmt in reversed(SUPPORTED.items())}


def _encrypted(data: bytes) -> bool:
    return b"/Encrypt" in data[-4096:] or b"/Encrypt" in data[:4096]


def _image_document(path: Path, data: bytes):
    """An image file as a one-page DoclingDocument holding one picture.

    Docling reads images through its layout and OCR models; without them the
    picture itself is what we keep, and the captioner describes it.
    """
    import hashlib

    from docling_core.types.doc import BoundingBox, DoclingDocument, ImageRef, ProvenanceItem, Size
    from docling_core.types.doc.document import DocumentOrigin
    from PIL import Image, UnidentifiedImageError

    try:
        image = Image.open(BytesIO(data))
        image.load()
    except (UnidentifiedImageError, OSError) as exc:
        raise ValueError(f"{path}: not a readable image ({exc})") from exc
    digest = int.from_bytes(hashlib.sha256(data).digest()[:8], "big")
    mimetype = Image.MIME.get(image.format or "", "image/png")
    doc = DoclingDocument(
        name=path.stem, origin=DocumentOrigin(mimetype=mimetype, binary_hash=digest, filename=path.name)
    )
    width, height = image.size
    doc.add_page(page_no=1, size=Size(width=width, height=height))
    prov = ProvenanceItem(page_no=1, bbox=BoundingBox(l=0, t=0, r=width, b=height), charspan=(0, 0))
    doc.add_picture(image=ImageRef.from_pil(image.convert("RGB"), dpi=72), prov=prov)
    return doc


def _text_document(path: Path, data: bytes):
    """A plain-text file as a DoclingDocument, one text item per paragraph.

    Docling has no plain-text reader, and its Markdown parser would rewrite
    text that merely looks like Markdown (``#`` lines, ``*stars*``, tags).
    """
    import hashlib
    import re

    from docling_core.types.doc import DocItemLabel, DoclingDocument
    from docling_core.types.doc.document import DocumentOrigin

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    digest = int.from_bytes(hashlib.sha256(data).digest()[:8], "big")
    doc = DoclingDocument(
        name=path.stem,
        origin=DocumentOrigin(mimetype="text/plain", binary_hash=digest, filename=path.name),
    )
    for paragraph in re.split(r"\n\s*\n", text):
        if paragraph.strip():
            doc.add_text(label=DocItemLabel.TEXT, text=" ".join(paragraph.split()))
    return doc
