"""Docling in this process: the converter's options, and the conversion of checked bytes.

The PDF pipeline is chosen by what is on the machine: the standard one
(layout, tables, OCR) needs models that cannot be downloaded offline, so
without them PDFs go through Docling's native pipeline, with one warning.
HTML and Markdown never fetch the images they reference unless asked to
(``ConvertOptions.allow_fetch``). The worker process (``rag_graphs.ingestion.convert.workers``)
runs ``convert_here`` too, so both paths convert alike.
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
from dataclasses import dataclass
from functools import lru_cache
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from docling.datamodel.base_models import InputFormat

from rag_graphs.ingestion.convert.documents import image_document
from rag_graphs.ingestion.convert.formats import SUPPORTED, stream_name
from rag_graphs.ingestion.convert.guards import MAX_FILE_BYTES, check_html_depth

if TYPE_CHECKING:
    from docling.document_converter import DocumentConverter
    from docling_core.types.doc import DoclingDocument

log = logging.getLogger(__name__)

TIMEOUT_SECONDS = 300.0


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


def _pdf_option(options: ConvertOptions) -> Any:
    """The standard PDF pipeline when its models are here, else the native one (with one warning)."""
    global _warned_native
    from docling.datamodel.pipeline_options import NativePdfPipelineOptions, PdfPipelineOptions
    from docling.document_converter import NativePdfFormatOption, PdfFormatOption

    standard = options.pdf_pipeline == "standard" or (
        options.pdf_pipeline == "auto" and layout_models_present()
    )
    if standard:
        pipeline = PdfPipelineOptions(
            do_table_structure=importlib.util.find_spec("docling_ibm_models") is not None,
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
def converter(options: ConvertOptions = ConvertOptions()) -> DocumentConverter:
    """One Docling converter per options (it caches its pipelines)."""
    from docling.datamodel.backend_options import HTMLBackendOptions, MarkdownBackendOptions
    from docling.document_converter import DocumentConverter, HTMLFormatOption, MarkdownFormatOption

    fetch = {
        "fetch_images": True,  # data: URIs; remote and local only with the two flags below
        "enable_remote_fetch": options.allow_fetch,
        "enable_local_fetch": options.allow_fetch,
    }
    web: dict[str, Any] = fetch  # Docling's backend options take these as keywords
    return DocumentConverter(
        allowed_formats=sorted(set(SUPPORTED.values()) - {InputFormat.IMAGE}, key=str),
        format_options={
            InputFormat.PDF: _pdf_option(options),
            InputFormat.HTML: HTMLFormatOption(backend_options=HTMLBackendOptions(**web)),
            InputFormat.MD: MarkdownFormatOption(backend_options=MarkdownBackendOptions(**web)),
        },
    )


def convert_here(path: Path, data: bytes, fmt: InputFormat, options: ConvertOptions) -> DoclingDocument:
    """Convert ``data`` (already read and checked) in this process: an image, or Docling."""
    from docling.datamodel.base_models import ConversionStatus, DocumentStream

    if fmt is InputFormat.IMAGE:
        return image_document(path, data)
    if fmt is InputFormat.HTML:
        check_html_depth(path, data)
    kwargs: dict[str, Any] = {"max_num_pages": options.max_pages} if options.max_pages else {}
    try:
        result = converter(options).convert(
            DocumentStream(name=stream_name(path, fmt), stream=BytesIO(data)), raises_on_error=False, **kwargs
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


def _encrypted(data: bytes) -> bool:
    return b"/Encrypt" in data[-4096:] or b"/Encrypt" in data[:4096]
