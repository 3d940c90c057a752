"""Conversion by a Docling Serve instance, for machines without Docling's models or at scale.

The server runs the full pipelines (layout, tables, OCR, picture images
embedded in the JSON) and returns a DoclingDocument; chunking, captioning and
provenance stay here, unchanged, so a served document is chunked exactly like
a local one. Only the conversion moves; its errors name the file like any other.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from docling_core.types.doc import DoclingDocument


def convert_remote(path: Path, data: bytes, url: str, *, timeout: float = 600.0) -> DoclingDocument:
    """Convert with a Docling Serve instance (``POST /v1/convert/file``, DoclingDocument JSON back).

    ``DOCLING_SERVE_API_KEY`` is sent as ``X-Api-Key`` when set.

    Raises:
        ValueError: the server is unreachable, answers an error, or could not convert the file;
            the message names the file.
    """
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
