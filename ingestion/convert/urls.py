"""``http(s)://`` sources for ingest: fetched here, under an SSRF guard, then converted like files.

Docling can convert a URL itself, but it would fetch whatever the URL (or a
redirect) names: ``http://169.254.169.254/`` (a cloud's credentials service),
``http://localhost:8080/admin`` or a machine on the private network. So the page
is fetched here instead, and every hop is checked before it is requested:

- only ``http`` and ``https``; no user:password in the URL;
- the host must resolve to public addresses only (no loopback, private, link-local,
  multicast, reserved or unspecified address), unless ``allow_private`` is set,
  the same opt-in (``IngestOptions.allow_fetch``) that lets documents fetch their
  images; an IPv6 address that carries an IPv4 one (``embedded_ipv4``: NAT64, 6to4,
  Teredo, IPv4-mapped or -compatible) is judged by that IPv4 address too, since the
  packets reach it: ``64:ff9b::a9fe:a9fe`` is ``169.254.169.254`` behind a NAT64
  gateway, though Python's ``ipaddress`` calls it global;
- redirects are followed by hand, at most ``MAX_REDIRECTS``, each one checked again;
- the body is read in a stream and refused past the file size limit.

The fetched bytes go to a private temporary folder (``rag_graphs.ingestion.sources``: a file
named after the URL, with a suffix from its path or content type, so format detection works as
for files); the
chunks' ``source`` is the URL, so citations name the page and re-ingesting the same
URL replaces its chunks. A name check cannot stop DNS rebinding between the check
and the connection (the host is resolved twice): a deployment that ingests
untrusted URLs also needs egress rules.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
import socket
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import urljoin, urlsplit

from rag_graphs.ingestion.convert.formats import SUPPORTED
from rag_graphs.support.redaction import redact_url

MAX_REDIRECTS = 5
TIMEOUT_SECONDS = 30.0
_CONTENT_SUFFIX = {
    "text/html": ".html",
    "application/xhtml+xml": ".html",
    "application/pdf": ".pdf",
    "text/markdown": ".md",
    "text/plain": ".txt",
    "text/csv": ".csv",
    "text/asciidoc": ".adoc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    "image/png": ".png",
    "image/jpeg": ".jpg",
}


def is_url(source: str | Path) -> bool:
    """True for a source written as an ``http://`` or ``https://`` URL."""
    return isinstance(source, str) and source.lower().startswith(("http://", "https://"))


def check_url(url: str, *, allow_private: bool = False) -> None:
    """Refuse a URL that is not plain http(s) or whose host resolves to a non-public address.

    Raises:
        ValueError: naming the URL (credentials redacted) and the address refused.
    """
    parts = urlsplit(url)
    shown = redact_url(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{shown}: only http:// and https:// URLs with a host can be ingested")
    if parts.username or parts.password:
        raise ValueError(f"{shown}: URLs with credentials are refused (they would be stored as the source)")
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or 0, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise ValueError(f"{shown}: cannot resolve {parts.hostname} ({exc.strerror})") from exc
    if allow_private:
        return
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if not public(address):
            inner = embedded_ipv4(address)
            carried = f" (it carries the IPv4 address {inner})" if inner is not None else ""
            raise ValueError(
                f"{shown}: refused, {parts.hostname} resolves to {address}{carried}, a non-public "
                "address (loopback, private, link-local or reserved); allow it with --allow-fetch "
                "(IngestOptions.allow_fetch) if you trust it"
            )


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052's well-known prefix
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215: a network's own translators
_COMPATIBLE = ipaddress.IPv6Network("::/96")  # deprecated IPv4-compatible (RFC 4291)
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # SIIT's IPv4-translated (RFC 2765)


def embedded_ipv4(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 ``address`` carries, which its packets may reach: IPv4-mapped
    (``::ffff:a.b.c.d``), IPv4-compatible (``::a.b.c.d``), IPv4-translated, NAT64
    (``64:ff9b::a.b.c.d``), 6to4 (``2002:AABB:CCDD::/48``) or Teredo (``2001::/32``, its
    client's address, stored inverted); None for any other address."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if any(address in net for net in (_NAT64, _COMPATIBLE, _TRANSLATED)):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether ``address`` and any IPv4 address it carries (``embedded_ipv4``) are global: what
    the guard lets a fetch reach. A local NAT64 prefix (``64:ff9b:1::/48``) is never public: how a
    network's own translator embeds IPv4 addresses in it is its own choice."""
    if isinstance(address, ipaddress.IPv6Address) and address in _NAT64_LOCAL:
        return False
    inner = embedded_ipv4(address)
    return address.is_global and (inner is None or inner.is_global)


@dataclass(frozen=True)
class Fetched:
    """One fetched page: the URL asked for, the URL it ended at, its bytes and content type."""

    url: str
    final_url: str
    data: bytes
    content_type: str


def fetch_url(
    url: str, *, max_bytes: int, allow_private: bool = False, timeout: float = TIMEOUT_SECONDS
) -> Fetched:
    """GET ``url`` with every hop checked by ``check_url`` and the body capped at ``max_bytes``.

    Raises:
        ValueError: a refused address, too many redirects, an HTTP error, a body over
            ``max_bytes``, or a network failure; the message names the URL.
    """
    import httpx

    current = url
    with httpx.Client(follow_redirects=False, timeout=timeout, trust_env=False) as client:
        for _ in range(MAX_REDIRECTS + 1):
            check_url(current, allow_private=allow_private)
            try:
                with client.stream("GET", current, headers={"User-Agent": "rag-graphs ingest"}) as response:
                    if response.is_redirect:
                        current = urljoin(current, response.headers.get("location", ""))
                        continue
                    if response.status_code != 200:
                        raise ValueError(
                            f"{redact_url(url)}: HTTP {response.status_code} from {redact_url(current)}"
                        )
                    data = _read_capped(response, max_bytes, url)
                    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                    return Fetched(url, current, data, kind)
            except httpx.HTTPError as exc:
                raise ValueError(f"{redact_url(url)}: cannot fetch it ({type(exc).__name__}: {exc})") from exc
    raise ValueError(f"{redact_url(url)}: more than {MAX_REDIRECTS} redirects")


def _read_capped(response: object, max_bytes: int, url: str) -> bytes:
    """The body, refused as soon as it passes ``max_bytes`` (a declared length is checked first)."""
    declared = int(getattr(response, "headers", {}).get("content-length") or 0)
    if declared > max_bytes:
        raise ValueError(
            f"{redact_url(url)}: {declared / 1e6:.1f} MB is over the {max_bytes / 1e6:.0f} MB limit"
        )
    body = bytearray()
    for chunk in response.iter_bytes():  # type: ignore[attr-defined]  # an httpx.Response
        body += chunk
        if len(body) > max_bytes:
            raise ValueError(f"{redact_url(url)}: over the {max_bytes / 1e6:.0f} MB limit")
    return bytes(body)


def file_name(fetched: Fetched) -> str:
    """A file name for the page: its URL's last path part, with a suffix format detection knows."""
    parts = urlsplit(fetched.final_url)
    path = PurePosixPath(parts.path)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", path.stem or parts.hostname or "page")[:80] or "page"
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED:
        suffix = _CONTENT_SUFFIX.get(fetched.content_type, ".html")
    digest = hashlib.sha256(fetched.url.encode()).hexdigest()[:8]  # two URLs, one name: no clash
    return f"{stem}-{digest}{suffix}"
