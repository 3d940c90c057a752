"""Picture descriptions: a ``Captioner`` turns a picture and its surrounding text into text.

Picture chunks are only findable by what their text says, so every picture
gets a description. Which captioner wrote it is stored with the chunk
(``captioner`` metadata), because a description from a vision model and one
assembled from the document's own caption deserve different trust.

Specs (``load_captioner``):
  ``fallback``            the picture's own caption and the text around it (offline, default)
  ``tesseract``           the text Tesseract reads in the picture, plus the caption
                          (needs the ``tesseract`` program on PATH, Debian ``tesseract-ocr``)
  ``api:<url>[#<model>]`` an OpenAI-compatible chat-completions endpoint, called through
                          Docling's picture-description API client (``docling.utils.api_image_request``)
  ``<provider>:<model>``  any LangChain chat model that accepts images
                          (``ollama:granite3.2-vision``, ``openai:gpt-4.1-mini``)

Prompts (``prompts/templates/picture_<name>.txt``): ``describe`` (default),
``extract_text``, ``chart``; each sees the caption and the surrounding text.
"""

from __future__ import annotations

import base64
import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from io import BytesIO
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import urlsplit, urlunsplit

from rag_graphs.prompts import load_prompt
from rag_graphs.prompts.fencing import fence
from rag_graphs.support.redaction import SecretScrubber, redact_url, url_secrets

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from PIL.Image import Image

log = logging.getLogger(__name__)

CaptionPrompt = Literal["describe", "extract_text", "chart"]
TEMPLATES: dict[str, str] = {
    "describe": "picture_describe",
    "extract_text": "picture_extract_text",
    "chart": "picture_chart",
}
PROMPTS: tuple[str, ...] = tuple(TEMPLATES)
FALLBACK = "fallback"


@dataclass(frozen=True)
class PictureInput:
    """What a captioner sees of one picture."""

    image: Image | None  # None when the document holds no pixels for it
    caption: str  # the document's own caption ("" when it has none)
    context: str  # text around the picture in the document


@dataclass(frozen=True)
class Caption:
    """A picture's description and who wrote it."""

    text: str
    captioner: str


class Captioner(Protocol):
    """Writes one description per picture."""

    name: str

    def describe(self, picture: PictureInput) -> Caption: ...


def fallback_text(picture: PictureInput) -> str:
    """The document's own words about a picture: its caption, else the text around it."""
    caption, context = picture.caption.strip(), " ".join(picture.context.split())[:600]
    near = f"Next to the text: {context}" if context else ""
    return "\n".join(part for part in (caption, near) if part) or "A picture without caption."


class FallbackCaptioner:
    """No model: the caption and nearby text, marked ``fallback`` in metadata."""

    name = FALLBACK

    def describe(self, picture: PictureInput) -> Caption:
        return Caption(fallback_text(picture), self.name)


class TesseractCaptioner:
    """The text Tesseract reads in the picture (charts, scanned tables, screenshots)."""

    name = "tesseract"

    def __init__(self, *, lang: str = "eng", timeout: float = 60.0) -> None:
        self.binary = shutil.which("tesseract")
        if self.binary is None:
            raise RuntimeError(
                "captioner 'tesseract': the tesseract program is not on PATH "
                "(Debian/Ubuntu: apt install tesseract-ocr; macOS: brew install tesseract)"
            )
        self.lang, self.timeout = lang, timeout

    def describe(self, picture: PictureInput) -> Caption:
        if picture.image is None:
            return Caption(fallback_text(picture), FALLBACK)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "picture.png")
            picture.image.convert("RGB").save(path)
            proc = subprocess.run(
                [str(self.binary), path, "stdout", "-l", self.lang],
                capture_output=True,
                text=True,
                timeout=self.timeout,
                check=False,
            )
        read = " ".join(proc.stdout.split())
        if proc.returncode != 0 or not read:
            return Caption(fallback_text(picture), FALLBACK)
        prefix = f"{picture.caption.strip()}. " if picture.caption.strip() else ""
        return Caption(f"{prefix}Text in the picture: {read}", self.name)


_SCRUB = SecretScrubber()


def _endpoint(url: str) -> str:
    """``url`` ending in ``/chat/completions`` (appended to the path, so a query string survives)."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions"
    return urlunsplit(parts._replace(path=path))


def _prompt_messages(prompt: CaptionPrompt, picture: PictureInput) -> list:
    """The selected picture prompt, filled with the picture's caption and surrounding text."""
    return load_prompt(
        TEMPLATES[prompt]
    ).format_messages(  # the document's words are data: fenced
        caption=fence(picture.caption or "(none)"), context=fence(picture.context[:1500] or "(none)")
    )


def _png_data_uri(image: Image) -> str:
    buffer = BytesIO()
    image.convert("RGB").save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


class ChatCaptioner:
    """A LangChain chat model that accepts images; transient errors are retried."""

    def __init__(self, model: BaseChatModel, *, name: str, prompt: CaptionPrompt = "describe") -> None:
        self.name, self.prompt = name, _check_prompt(prompt)
        self.model = model.with_retry(stop_after_attempt=3, wait_exponential_jitter=True)

    def describe(self, picture: PictureInput) -> Caption:
        if picture.image is None:
            return Caption(fallback_text(picture), FALLBACK)
        from langchain_core.messages import HumanMessage

        messages = _prompt_messages(self.prompt, picture)
        last = messages[-1]
        image_part = {"type": "image_url", "image_url": {"url": _png_data_uri(picture.image)}}
        messages[-1] = HumanMessage(content=[{"type": "text", "text": str(last.content)}, image_part])
        reply = self.model.invoke(messages)
        text = reply.text if isinstance(reply.text, str) else str(reply.content)
        return Caption(text.strip() or fallback_text(picture), self.name if text.strip() else FALLBACK)


class ApiCaptioner:
    """An OpenAI-compatible endpoint, through Docling's picture-description API client."""

    def __init__(
        self,
        url: str,
        *,
        model: str | None = None,
        prompt: CaptionPrompt = "describe",
        timeout: float = 60.0,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.url = _endpoint(url)
        self.params: dict[str, Any] = {"model": model} if model else {}
        self.prompt, self.timeout = _check_prompt(prompt), timeout
        key = os.environ.get("OPENAI_API_KEY")
        self.headers = headers if headers is not None else ({"Authorization": f"Bearer {key}"} if key else {})
        # The name is stored with every chunk and logged: the URL without its keys.
        self.name = f"api:{redact_url(url)}" + (f"#{model}" if model else "")
        header_secrets = {v.split(" ")[-1] for v in self.headers.values()} | set(self.headers.values())
        _SCRUB.watch(url_secrets(url) | {s for s in header_secrets if len(s) >= 4})

    def describe(self, picture: PictureInput) -> Caption:
        if picture.image is None:
            return Caption(fallback_text(picture), FALLBACK)
        from docling.utils.api_image_request import api_image_request

        messages = _prompt_messages(self.prompt, picture)
        prompt = "\n\n".join(str(m.content) for m in messages)
        result = api_image_request(
            picture.image,
            prompt,
            self.url,  # type: ignore[arg-type]  # pydantic coerces the string to its URL type
            timeout=self.timeout,
            headers=self.headers,
            **self.params,
        )
        if result.error or not result.text.strip():
            log.warning("captioner %s failed on a picture (%s); using the fallback", self.name, result.error)
            return Caption(fallback_text(picture), FALLBACK)
        return Caption(result.text.strip(), self.name)


def _check_prompt(prompt: str) -> CaptionPrompt:
    if prompt not in PROMPTS:
        raise ValueError(f"caption prompt {prompt!r}: use one of {', '.join(PROMPTS)}")
    return prompt  # type: ignore[return-value]


def load_captioner(spec: str | Captioner | None = None, *, prompt: CaptionPrompt = "describe") -> Captioner:
    """The captioner a spec names (see the module docstring); ``None`` is the fallback.

    Raises:
        ValueError: an unknown spec or prompt.
        RuntimeError: ``tesseract`` without the program on PATH.
    """
    _check_prompt(prompt)
    if spec is None or spec == FALLBACK:
        return FallbackCaptioner()
    if not isinstance(spec, str):
        return spec
    if spec in ("tesseract", "ocr"):
        return TesseractCaptioner()
    if spec.startswith("api:"):
        url, _, model = spec[4:].partition("#")
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"captioner spec {spec!r}: expected api:http(s)://host/v1[#model]")
        return ApiCaptioner(url, model=model or None, prompt=prompt)
    if ":" not in spec:
        raise ValueError(
            f"captioner spec {spec!r}: expected 'fallback', 'tesseract', 'api:<url>[#model]' "
            "or '<provider>:<model>' (e.g. 'ollama:granite3.2-vision')"
        )
    from langchain.chat_models import init_chat_model

    return ChatCaptioner(init_chat_model(spec, temperature=0), name=spec, prompt=prompt)


def caption_all(
    captioner: Captioner,
    pictures: Sequence[PictureInput],
    *,
    concurrency: int = 4,
    on_done: Callable[[], None] | None = None,
) -> list[Caption]:
    """Describe every picture, ``concurrency`` at a time for remote captioners.

    A picture whose captioner fails gets the fallback description (and says
    so in ``captioner``): one bad picture never loses the document.
    """

    def one(picture: PictureInput) -> Caption:
        try:
            return captioner.describe(picture)
        except Exception as exc:  # a captioner failing must not lose the document
            log.warning("captioner %s failed on a picture (%s); using the fallback", captioner.name, exc)
            return Caption(fallback_text(picture), FALLBACK)
        finally:
            if on_done:
                on_done()

    workers = 1 if isinstance(captioner, FallbackCaptioner) else max(1, concurrency)
    if workers == 1 or len(pictures) <= 1:
        return [one(p) for p in pictures]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, pictures))
