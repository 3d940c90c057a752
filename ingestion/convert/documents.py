"""DoclingDocuments built by hand, for the files Docling has no reader for here.

Images go through Docling's layout and OCR models, which an offline machine
may not have, so an image becomes a one-page document holding the picture
itself (the captioner describes it). Plain text has no Docling reader at all,
and the Markdown parser would rewrite text that merely looks like Markdown, so
``.txt`` becomes one text item per paragraph. Both keep an origin (mimetype,
content hash, file name) like any converted document.
"""

from __future__ import annotations

import hashlib
import re
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from docling_core.types.doc import DoclingDocument


def image_document(path: Path, data: bytes) -> DoclingDocument:
    """An image file as a one-page DoclingDocument holding one picture.

    Docling reads images through its layout and OCR models; without them the
    picture itself is what we keep, and the captioner describes it.
    """
    from docling_core.types.doc import BoundingBox, ImageRef, ProvenanceItem, Size
    from PIL import Image, UnidentifiedImageError

    try:
        image = Image.open(BytesIO(data))
        image.load()
    except (UnidentifiedImageError, OSError) as exc:
        raise ValueError(f"{path}: not a readable image ({exc})") from exc
    doc = _empty_document(path, data, Image.MIME.get(image.format or "", "image/png"))
    width, height = image.size
    doc.add_page(page_no=1, size=Size(width=width, height=height))
    prov = ProvenanceItem(page_no=1, bbox=BoundingBox(l=0, t=0, r=width, b=height), charspan=(0, 0))
    doc.add_picture(image=ImageRef.from_pil(image.convert("RGB"), dpi=72), prov=prov)
    return doc


def text_document(path: Path, data: bytes) -> DoclingDocument:
    """A plain-text file as a DoclingDocument, one text item per paragraph.

    Docling has no plain-text reader, and its Markdown parser would rewrite
    text that merely looks like Markdown (``#`` lines, ``*stars*``, tags).
    """
    from docling_core.types.doc import DocItemLabel

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    doc = _empty_document(path, data, "text/plain")
    for paragraph in re.split(r"\n\s*\n", text):
        if paragraph.strip():
            doc.add_text(label=DocItemLabel.TEXT, text=" ".join(paragraph.split()))
    return doc


def _empty_document(path: Path, data: bytes, mimetype: str) -> DoclingDocument:
    """A document named after ``path`` whose origin records ``data``'s hash, as Docling's do."""
    from docling_core.types.doc import DoclingDocument
    from docling_core.types.doc.document import DocumentOrigin

    digest = int.from_bytes(hashlib.sha256(data).digest()[:8], "big")
    origin = DocumentOrigin(mimetype=mimetype, binary_hash=digest, filename=path.name)
    return DoclingDocument(name=path.stem, origin=origin)
