"""Turn a fetched body into a ParsedPage: the structured record Combine's internal parsers made.

Pure code, no Scrapy. The character set comes from the BOM, the
Content-Type header, the page's own ``<meta>``, then detection
(charset-normalizer); everything comes out as ``str``. HTML goes through
lxml: title, headings, meta (names lower-cased), visible text, links with
their anchor text, ``<meta name="robots">``. Plain text yields its text and,
with extractLinksFromText, the URLs written in it.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parsedate_to_datetime
from urllib.parse import urljoin

import charset_normalizer
import lxml.etree
import lxml.html
from w3lib.encoding import html_to_unicode, http_content_type_encoding, read_bom

HTML_TYPES = ("text/html", "application/xhtml+xml")
TEXT_TYPES = ("text/plain",)
_BLOCK_TAGS = frozenset(
    "address article aside blockquote body br dd div dl dt fieldset figcaption figure footer form "
    "h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section table tbody td tfoot th thead tr ul".split()
)
_INVISIBLE_TAGS = ("script", "style", "noscript", "template", "head")
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
# href-like attributes that lead somewhere, and the link kind each gives.
_LINK_ATTRIBUTES = (("a", "href", "a"), ("area", "href", "area"), ("frame", "src", "frame"), ("iframe", "src", "frame"), ("img", "src", "img"))
_WHITESPACE = re.compile(r"\s+")
_TEXT_URL = re.compile(r"""\b(?:https?|ftp)://[^\s<>"'`{}|\\^\[\]]+""", re.IGNORECASE)


@dataclass(frozen=True)
class Link:
    url: str
    anchor: str = ""
    kind: str = "a"   # a, area, frame, img, redirect, text
    title: str = ""   # the link's title attribute, a hint of where it leads


@dataclass
class ParsedPage:
    url: str
    mime_type: str
    charset: str | None = None
    title: str = ""
    headings: list[str] = field(default_factory=list)
    meta: dict[str, list[str]] = field(default_factory=dict)
    text: str = ""
    links: list[Link] = field(default_factory=list)
    modified: datetime | None = None
    expires: datetime | None = None
    server: str | None = None
    robots_noindex: bool = False
    robots_nofollow: bool = False
    html: str | None = None


def _http_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None


def _clean(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def _detect_charset(body: bytes) -> str | None:
    best = charset_normalizer.from_bytes(body[:65536]).best()
    return best.encoding if best else None


def _charset_name(encoding: str) -> str:
    """Python's standard name of an encoding: ``utf_8`` and ``UTF8`` both give ``utf-8``."""
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        return encoding


def mime_type_of(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def decode_text(body: bytes, content_type: str | None) -> tuple[str, str]:
    """(text, charset) of a non-HTML body: BOM, header charset, then detection."""
    bom_encoding, bom = read_bom(body)
    if bom_encoding:
        return body[len(bom):].decode(bom_encoding, errors="replace"), _charset_name(bom_encoding)
    declared = http_content_type_encoding(content_type)
    if declared:
        try:
            return body.decode(declared), _charset_name(declared)
        except UnicodeDecodeError:
            pass
    detected = _detect_charset(body) or "utf-8"
    return body.decode(detected, errors="replace"), _charset_name(detected)


def _visible_text(root: lxml.html.HtmlElement) -> str:
    """Text of the page as a reader sees it: block elements apart, inline ones joined."""
    chunks: list[str] = []

    def walk(element):
        tag = element.tag if isinstance(element.tag, str) else ""
        if tag in _INVISIBLE_TAGS or not tag:
            if element.tail:
                chunks.append(element.tail)
            return
        block = tag in _BLOCK_TAGS
        if block:
            chunks.append("\n")
        if element.text:
            chunks.append(element.text)
        for child in element:
            walk(child)
        if block:
            chunks.append("\n")
        if element.tail:
            chunks.append(element.tail)

    walk(root)
    return "\n".join(_clean(line) for line in "".join(chunks).split("\n") if line.strip())


def _apply_robots(page: ParsedPage, directives: str) -> None:
    """``<meta name="robots">`` and X-Robots-Tag: noindex, nofollow, none (both)."""
    words = set(re.split(r"[\s,]+", directives.lower()))
    page.robots_noindex |= bool(words & {"noindex", "none"})
    page.robots_nofollow |= bool(words & {"nofollow", "none"})


def _text_links(text: str, seen: set[str]) -> list[Link]:
    links = []
    for match in _TEXT_URL.finditer(text):
        url = match.group(0).rstrip(".,;:!?)")
        if url not in seen:
            seen.add(url)
            links.append(Link(url, "", "text"))
    return links


def _parse_html(page: ParsedPage, body: bytes, content_type: str | None, extract_links_from_text: bool) -> None:
    encoding, html = html_to_unicode(content_type, body, auto_detect_fun=_detect_charset)
    page.charset = _charset_name(encoding)
    page.html = html
    try:
        root = lxml.html.document_fromstring(html.replace("\x00", "") or "<html></html>")
    except (lxml.etree.ParserError, ValueError):
        return
    page.title = _clean(" ".join(root.xpath("//title//text()")))
    for element in root.iter("meta"):
        name = (element.get("name") or element.get("http-equiv") or element.get("property") or "").strip().lower()
        content = _clean(element.get("content") or "")
        if name and content:
            page.meta.setdefault(name, []).append(content)
    _apply_robots(page, " ".join(page.meta.get("robots", [])))
    if page.expires is None and "expires" in page.meta:
        page.expires = _http_date(page.meta["expires"][0])
    page.headings = [text for text in (_clean(h.text_content()) for h in root.iter(*_HEADINGS)) if text]
    base = page.url
    for element in root.iter("base"):
        if element.get("href"):
            base = urljoin(page.url, element.get("href").strip())
            break
    seen: set[str] = set()
    for tag, attribute, kind in _LINK_ATTRIBUTES:
        for element in root.iter(tag):
            target = (element.get(attribute) or "").strip()
            if not target or target.startswith("#"):
                continue
            url = urljoin(base, target)
            if url in seen:
                continue
            seen.add(url)
            title = _clean(element.get("title") or "")
            anchor = _clean(element.text_content()) if tag in ("a", "area") else ""
            anchor = anchor or _clean(element.get("alt") or "") or title
            page.links.append(Link(url, anchor, kind, title))
    page.text = _visible_text(root)
    if extract_links_from_text:
        page.links.extend(_text_links(page.text, seen))


def parse_document(
    url: str, body: bytes, headers: dict[str, str], *, extract_links_from_text: bool = True
) -> ParsedPage:
    """Parse a response body; ``headers`` has lower-case names."""
    content_type = headers.get("content-type")
    mime_type = mime_type_of(content_type) or ("text/html" if body.lstrip()[:1] == b"<" else "application/octet-stream")
    page = ParsedPage(
        url=url,
        mime_type=mime_type,
        modified=_http_date(headers.get("last-modified")),
        expires=_http_date(headers.get("expires")),
        server=headers.get("server"),
    )
    if mime_type in HTML_TYPES:
        _parse_html(page, body, content_type, extract_links_from_text)
    elif mime_type in TEXT_TYPES or mime_type.startswith("text/"):
        page.text, page.charset = decode_text(body, content_type)
        page.text = "\n".join(_clean(line) for line in page.text.splitlines() if line.strip())
        if extract_links_from_text:
            page.links = _text_links(page.text, set())
    _apply_robots(page, headers.get("x-robots-tag", ""))
    return page
