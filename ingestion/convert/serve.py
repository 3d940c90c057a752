"""Conversion by a Docling Serve instance, for machines without Docling's models or at scale.

The server runs the full pipelines (layout, tables, OCR, picture images
embedded in the JSON) and returns a DoclingDocument; chunking, captioning and
provenance stay here, unchanged, so a served document is chunked exactly like
a local one. Only the conversion moves; its errors name the file like any other.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from docling_core.types.doc import DoclingDocument

OPTIONS_ENV = "RAG_GRAPHS_DOCLING_SERVE_OPTIONS"
"""Extra conversion options for every request, a JSON object of Docling Serve form fields.

Docling Serve sets up its standard PDF pipeline (layout model weights from the Hugging Face
Hub) for every request, even an HTML or DOCX file. A server without those weights converts
office and web formats once the PDF pipeline is one that loads nothing, e.g.
``{"pipeline": "vlm", "vlm_pipeline_model": "granite_vision_ollama"}`` (a remote VLM that is
only called for PDFs and images; the server needs ``DOCLING_SERVE_ENABLE_REMOTE_SERVICES=true``).
"""


def request_options() -> dict[str, Any]:
    """The form fields ``RAG_GRAPHS_DOCLING_SERVE_OPTIONS`` adds (``{}`` when unset).

    Raises:
        ValueError: the value is not a JSON object of scalar or list values; names the variable.
    """
    raw = os.environ.get(OPTIONS_ENV, "").strip()
    if not raw:
        return {}
    try:
        options = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{OPTIONS_ENV} must be a JSON object of Docling Serve options: {exc}") from exc
    if not isinstance(options, dict) or not all(
        isinstance(v, str | int | float | bool | list) for v in options.values()
    ):
        raise ValueError(
            f'{OPTIONS_ENV} must be a JSON object of form fields, e.g. {{"pipeline": "vlm"}}: {raw[:80]!r}'
        )
    return {str(k): (json.dumps(v) if isinstance(v, bool) else v) for k, v in options.items()}


def convert_remote(path: Path, data: bytes, url: str, *, timeout: float = 600.0) -> DoclingDocument:
    """Convert with a Docling Serve instance (``POST /v1/convert/file``, DoclingDocument JSON back).

    ``DOCLING_SERVE_API_KEY`` is sent as ``X-Api-Key`` when set; ``RAG_GRAPHS_DOCLING_SERVE_OPTIONS``
    adds conversion options (see ``OPTIONS_ENV``).

    Raises:
        ValueError: the server is unreachable, answers an error, or could not convert the file;
            the message names the file.
    """
    import httpx
    from docling_core.types.doc import DoclingDocument

    endpoint = url.rstrip("/") + "/v1/convert/file"
    headers = {"X-Api-Key": key} if (key := os.environ.get("DOCLING_SERVE_API_KEY")) else {}
    form = {**request_options(), "to_formats": "json", "image_export_mode": "embedded"}
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
