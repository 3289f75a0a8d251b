"""Turn a fetched body into a ParsedPage: the structured record Combine's internal parsers made.

Pure code, no Scrapy. The parser is chosen by MIME type (guessed from the
body's magic bytes and the URL's extension when the server says nothing
useful): HTML, plain text, TeX and images are parsed here; other types go
through the job's converters (:mod:`combine_scrapy.document.convert`) to text or HTML
first. The character set comes from the BOM (which wins, as in browsers),
bytes that are UTF-8, the Content-Type header, the page's own ``<meta>``,
then detection (charset-normalizer); a declaration the bytes contradict is
passed over. One exception to the BOM: a UTF-16 BOM before bytes that are
UTF-8 and hold no NUL is a server's slip (read as UTF-16 they are CJK
mojibake), so they are read as UTF-8, noted ``stray_bom``.
Everything comes out as ``str``. HTML is parsed with lxml
(:mod:`combine_scrapy.document.htmltree`: per-thread parsers, control characters
removed, any depth), without scripts, styles and comments, into title,
headings, meta (names lower-cased), visible text, the main content block
(:mod:`combine_scrapy.document.content`), links with their anchor text (never
``javascript:`` and other script or ``data:`` URLs), ``<meta name="robots">``.
With extractLinksFromText, URLs written in the text become links too.

A document that cannot be read is no silent empty page: the page's
``failure`` names the reason (``unsupported`` for a type no parser or
converter reads: JSON, XML, ZIP, video), it is logged here, and
ParsePipeline counts it as ``parse/failed/<reason>``. What was odd about a
document that was read goes in its ``notes``, counted as ``parse/note/<note>``.
"""

from __future__ import annotations

import codecs
import logging
import mimetypes
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parsedate_to_datetime
from urllib.parse import unquote, urljoin, urlsplit

import charset_normalizer
import lxml.etree
from charset_normalizer.utils import is_multi_byte_encoding
from w3lib.encoding import html_body_declared_encoding, http_content_type_encoding, read_bom, resolve_encoding

from combine_scrapy.document.content import main_content_of
from combine_scrapy.document.convert import DEFAULT_CONVERTERS, Conversion, Converter, Limits, convert_document
from combine_scrapy.document.convert.image import image_info
from combine_scrapy.document.convert.tex import parse_tex
from combine_scrapy.document.htmltree import EmptyDocument, parse_html, sanitize

logger = logging.getLogger(__name__)

HTML_TYPES = ("text/html", "application/xhtml+xml")
TEXT_TYPES = ("text/plain",)
TEX_TYPES = ("application/x-tex", "text/x-tex", "application/x-latex", "text/x-latex")
# Types a server sends when it does not know better; the body and the URL then say what it is.
_UNKNOWN_TYPES = ("", "application/octet-stream", "binary/octet-stream", "application/unknown")
_MAGIC = ((b"%PDF-", "application/pdf"), (b"%!PS", "application/postscript"), (b"{\\rtf", "application/rtf"))
# Elements whose content is code, not text: removed from the tree before anything is read from it.
_CODE_TAGS = ("script", "style")
# Link targets that run code or carry their content inline; never followed (browsers ignore
# whitespace and control characters inside the scheme, so these are removed before matching).
_SCRIPT_URL = re.compile(r"(?:javascript|jscript|livescript|vbscript|mocha|about|data):", re.IGNORECASE)
_URL_IGNORED = re.compile(r"[\x00-\x20]+")
_HIGH_BYTE = re.compile(rb"[\x80-\xff]")
_HIGH_BYTE_RUNS = re.compile(rb"[\x80-\xff]{2,}")
_UNREADABLE = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\ufffd]")
# <meta http-equiv="refresh" content="5; url=/next">: the delay, then the target.
_REFRESH = re.compile(r"""\s*[\d.]*+\s*[;,]?\s*(?:url\s*=\s*)?(["']?)(?P<url>[^"']+)\1""", re.IGNORECASE)
_BLOCK_TAGS = frozenset(
    "address article aside blockquote body br dd div dl dt fieldset figcaption figure footer form "
    "h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section table tbody td tfoot th thead tr ul".split()
)
_INVISIBLE_TAGS = ("script", "style", "noscript", "template", "head")
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
# href-like attributes that lead somewhere, and the link kind each gives.
_LINK_ATTRIBUTES = (
    ("a", "href", "a"), ("area", "href", "area"), ("frame", "src", "frame"), ("iframe", "src", "frame"),
    ("img", "src", "img"), ("image", "src", "img"),
)
_TEXT_URL = re.compile(r"""\b(?:https?|ftp)://[^\s<>"'`{}|\\^\[\]]+""", re.IGNORECASE)


@dataclass(frozen=True)
class Link:
    url: str
    anchor: str = ""
    kind: str = "a"   # a, area, frame, img, redirect, text
    title: str = ""   # the link's title attribute, a hint of where it leads
    context: str = field(default="", compare=False)  # the words just before and after it, for the link model


@dataclass
class ParsedPage:
    url: str
    mime_type: str
    charset: str = ""  # of the decoded text; empty when nothing was decoded (binary, converted, no body)
    title: str = ""
    headings: list[str] = field(default_factory=list)
    meta: dict[str, list[str]] = field(default_factory=dict)
    text: str = ""
    links: list[Link] = field(default_factory=list)
    modified: datetime | None = None
    expires: datetime | None = None
    server: str = ""
    robots_noindex: bool = False
    robots_nofollow: bool = False
    html: str | None = None
    main_text: str | None = None  # an HTML page's main content block (content.py), None for other documents
    conversions: list[Conversion] = field(default_factory=list)  # converter runs, in order; the last may have failed
    failure: str = ""  # why the document could not be read (then logged and counted), empty when it could
    notes: list[str] = field(default_factory=list)  # what was odd about a document that was read (counted)


def _http_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None


def _clean(text: str) -> str:
    """``text`` with each run of whitespace one space (str.split's whitespace is re's ``\\s``), no control characters."""
    return " ".join(sanitize(text).split())


def _fail(page: ParsedPage, reason: str, detail: str) -> None:
    """Record why the document could not be read, and log it; ParsePipeline counts it."""
    page.failure = reason
    logger.warning("cannot parse %s (%s): %s: %s", page.url, page.mime_type, reason, detail)


#: The web's fallback for undeclared pages (WHATWG); detection picks it among equally good single-byte guesses.
WEB_DEFAULT_CHARSET = "cp1252"


def _detect_charset(body: bytes) -> str | None:
    """charset-normalizer's guess; among the least chaotic, Windows-1252 when it fits as well as the others.

    Short Western pages decode without chaos in several code pages, and
    the detector's first pick (cp852, cp1250) is rarely what a server meant.
    """
    matches = charset_normalizer.from_bytes(body[:65536])
    best = matches.best()
    if best is None:
        return WEB_DEFAULT_CHARSET if _isolated_high_bytes(body[:65536]) else None
    if is_multi_byte_encoding(best.encoding) and _isolated_high_bytes(body[:65536]):
        return WEB_DEFAULT_CHARSET
    least_chaos = min(match.chaos for match in matches)
    for match in matches:
        if match.chaos <= least_chaos and WEB_DEFAULT_CHARSET in match.could_be_from_charset:
            return WEB_DEFAULT_CHARSET
    return best.encoding


def _isolated_high_bytes(sample: bytes) -> bool:
    """Bytes above 127 that mostly stand alone between ASCII: accented letters of a single-byte Western charset.

    Text in a multi-byte charset (Big5, GBK, Shift_JIS, EUC) is runs of such
    bytes, yet the detector often picks one for a short Western page ("Skärgård"
    is two valid Big5 characters).
    """
    high = len(_HIGH_BYTE.findall(sample))
    paired = sum(len(run) for run in _HIGH_BYTE_RUNS.findall(sample))
    return high > 0 and paired < 0.2 * high


def _charset_name(encoding: str) -> str:
    """Python's standard name of an encoding: ``utf_8`` and ``UTF8`` both give ``utf-8``."""
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        return encoding


def mime_type_of(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _strict(body: bytes, encoding: str | None) -> str | None:
    """``body`` decoded with ``encoding`` (a web label: latin-1 reads as Windows-1252), or None if it does not fit."""
    resolved = resolve_encoding(encoding) if encoding else None
    if not resolved:
        return None
    try:
        return body.decode(resolved)
    except (UnicodeDecodeError, LookupError):
        return None


def _utf8(body: bytes, declared: bool) -> str | None:
    """``body`` as UTF-8 when its bytes say so: non-ASCII text that is (nearly) all valid UTF-8.

    Legacy encodings almost never form valid UTF-8 sequences by chance, so
    this beats any declaration (servers that say ISO-8859-1 about UTF-8
    pages are common); a stray bad byte in a UTF-8 page becomes U+FFFD
    instead of sending the whole page to a wrong guess. When UTF-8 is
    ``declared`` too, valid sequences need only outnumber the bad bytes.
    """
    if body.isascii():
        return None
    text = body.decode("utf-8", errors="replace")
    errors = text.count("\ufffd")
    valid = len(text) - len(text.encode("ascii", errors="ignore")) - errors  # non-ASCII characters, counted in C
    return text if valid > 0 and valid >= (1 if declared else 10) * errors else None


def stray_utf16_bom(body: bytes) -> bool:
    """Whether a UTF-16 byte-order mark stands before bytes that are UTF-8 and hold no NUL (UTF-16 text of
    Latin letters is half NULs): what a server that prepends a BOM to a UTF-8 page sends."""
    encoding, bom = read_bom(body)
    if bom is None or encoding not in ("utf-16-le", "utf-16-be"):
        return False
    rest = body[len(bom):]
    if b"\x00" in rest:
        return False
    try:
        rest.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _decode(page: ParsedPage, body: bytes, content_type: str | None, html: bool = False) -> str:
    """The body as text (decode_body), its charset set on the page and a stray BOM noted and logged."""
    text, page.charset = decode_body(body, content_type, html=html)
    if stray_utf16_bom(body):
        page.notes.append("stray_bom")
        logger.info("%s: a UTF-16 byte-order mark before UTF-8 bytes; read as UTF-8", page.url)
    return text


def decode_body(body: bytes, content_type: str | None, html: bool = False) -> tuple[str, str]:
    """(text, charset): BOM, UTF-8 bytes, the header's charset, the page's ``<meta>`` (HTML), then detection.

    A BOM wins, as in browsers. A declaration the bytes do not fit is passed
    over for detection; only when nothing fits is the first declaration used
    with replacement characters.
    """
    bom_encoding, bom = read_bom(body)
    if bom_encoding is not None and bom is not None:
        if stray_utf16_bom(body):
            return body[len(bom):].decode("utf-8"), "utf-8"
        return body[len(bom):].decode(bom_encoding, errors="replace"), _charset_name(bom_encoding)
    declared = [http_content_type_encoding(content_type)]
    if html:
        declared.append(html_body_declared_encoding(body))
    utf8 = _utf8(body, any(_charset_name(resolve_encoding(e) or e) == "utf-8" for e in declared if e))
    if utf8 is not None:
        return utf8, "utf-8"
    for encoding in filter(None, declared):
        text = _strict(body, encoding)
        if text is not None:
            return text, _charset_name(resolve_encoding(encoding) or encoding)
    if body.isascii() and b"\x1b" not in body and body.count(b"\x00") * 4 < len(body):
        # ASCII, and neither UTF-16/32 (a NUL every other byte or more) nor ISO-2022 (escape sequences)
        return body.decode("ascii"), WEB_DEFAULT_CHARSET
    detected = _detect_charset(body)
    if detected:
        text = _strict(body, detected)
        if text is not None:
            return text, _charset_name(resolve_encoding(detected) or detected)
    fallback = next((resolve_encoding(e) for e in declared if e and resolve_encoding(e)), None) or "utf-8"
    return body.decode(fallback, errors="replace"), _charset_name(fallback)


def _visible_text(root: lxml.etree._Element) -> str:
    """Text of the page as a reader sees it: block elements apart, inline ones joined.

    Walked without recursion, so a deeply nested page cannot exhaust the stack.
    """
    chunks: list[str] = []
    hidden = 0  # depth inside an invisible element
    for event, element in lxml.etree.iterwalk(root, events=("start", "end")):
        tag = element.tag if isinstance(element.tag, str) else ""
        if event == "start":
            if hidden or tag in _INVISIBLE_TAGS or not tag:
                hidden += 1
            else:
                if tag in _BLOCK_TAGS:
                    chunks.append("\n")
                if element.text:
                    chunks.append(element.text)
            continue
        if hidden:
            hidden -= 1
            if hidden:
                continue
        elif tag in _BLOCK_TAGS:
            chunks.append("\n")
        if element.tail and element is not root:
            chunks.append(element.tail)
    return "\n".join(_clean(line) for line in "".join(chunks).split("\n") if line.strip())


def _text_content(element: lxml.etree._Element) -> str:
    """All text inside ``element``, clean of whitespace runs and control characters."""
    return _clean("".join(element.itertext()))


def _apply_robots(page: ParsedPage, directives: str) -> None:
    """``<meta name="robots">`` and X-Robots-Tag: noindex, nofollow, none (both)."""
    words = set(re.split(r"[\s,]+", directives.lower()))
    page.robots_noindex |= bool(words & {"noindex", "none"})
    page.robots_nofollow |= bool(words & {"nofollow", "none"})


def _text_links(text: str, seen: set[str]) -> list[Link]:
    if "://" not in text:  # in every match; most pages have none, and the expression is slow to scan with
        return []
    links = []
    for match in _TEXT_URL.finditer(text):
        url = match.group(0).rstrip(".,;:!?)")
        if url not in seen:
            seen.add(url)
            links.append(Link(url, "", "text"))
    return links


def _link_context(element: lxml.etree._Element, words: int = 10) -> str:
    """Up to ``words`` words of the text right before a link (in its parent) and right after it."""
    previous, parent = element.getprevious(), element.getparent()
    before = (previous.tail if previous is not None else parent.text if parent is not None else None) or ""
    return sanitize(" ".join(before.split()[-words:] + (element.tail or "").split()[:words]))


def _link_target(target: str | None) -> str:
    """An href as a browser reads it (outer spaces and controls gone); empty when it leads nowhere to crawl."""
    target = sanitize(target or "").strip(" \t\n\r")
    if not target or target.startswith("#"):
        return ""
    head = target[:64]
    if (":" in head or "%" in head) and _SCRIPT_URL.match(_URL_IGNORED.sub("", unquote(head))):
        return ""
    return target.replace("\t", "").replace("\n", "").replace("\r", "")


def _parse_html(page: ParsedPage, html: str, extract_links_from_text: bool) -> None:
    """Fill ``page`` from decoded HTML: title, meta, headings, links, text and main content, from one parse."""
    page.html = html
    try:
        root, fallback = parse_html(html)
    except EmptyDocument:
        _fail(page, "empty", "no element and no text")
        return
    except (lxml.etree.LxmlError, ValueError) as error:
        _fail(page, "html", f"{type(error).__name__}: {error}")
        return
    if fallback:
        logger.info("%s: too deep or too many attributes for libxml2; read by the fallback parser", page.url)
    lxml.etree.strip_elements(root, *_CODE_TAGS, with_tail=False)
    page.title = _clean(" ".join(text for title in root.iter("title") for text in title.itertext()))
    for element in root.iter("meta"):
        name = (element.get("name") or element.get("http-equiv") or element.get("property") or "").strip().lower()
        content = _clean(element.get("content") or "")
        if name and content:
            page.meta.setdefault(sanitize(name), []).append(content)
    _apply_robots(page, " ".join(page.meta.get("robots", [])))
    if page.expires is None and "expires" in page.meta:
        page.expires = _http_date(page.meta["expires"][0])
    page.headings = [text for text in (_text_content(h) for h in root.iter(*_HEADINGS)) if text]
    base = page.url
    for element in root.iter("base"):
        href = _link_target(element.get("href"))
        if href:
            base = _join(page.url, href) or page.url
            break
    seen: set[str] = set()
    for tag, attribute, kind in _LINK_ATTRIBUTES:
        for element in root.iter(tag):
            target = _link_target(element.get(attribute))
            url = _join(base, target) if target else ""
            if not url or url in seen:
                continue
            seen.add(url)
            title = _clean(element.get("title") or "")
            anchor = _text_content(element) if tag in ("a", "area") else ""
            anchor = anchor or _clean(element.get("alt") or "") or title
            page.links.append(Link(url, anchor, kind, title, _link_context(element)))
    for refresh in page.meta.get("refresh", []):
        match = _REFRESH.match(refresh)
        target = _link_target(match.group("url")) if match else ""
        url = _join(base, target) if target else ""
        if url and url not in seen:
            seen.add(url)
            page.links.append(Link(url, "", "redirect"))
    page.text = _visible_text(root)
    page.main_text = sanitize(main_content_of(root))
    if extract_links_from_text:
        page.links.extend(_text_links(page.text, seen))
    if not (page.title or page.text or page.links):
        _fail(page, "empty", "no title, text or links")


def _join(base: str, target: str) -> str:
    """``target`` resolved against ``base``; empty when it is no URL at all (``http://[``)."""
    try:
        return urljoin(base, target)
    except ValueError:
        return ""


def _parse_text(page: ParsedPage, text: str, extract_links_from_text: bool) -> None:
    page.text = "\n".join(_clean(line) for line in text.splitlines() if line.strip())
    if not page.text:
        _fail(page, "empty", "no text")
    elif extract_links_from_text:
        page.links = _text_links(page.text, set())


def _looks_binary(text: str) -> bool:
    """Decoded text that is mostly control and replacement characters: bytes that are no text in any charset."""
    sample = text[:4096]
    unreadable = len(_UNREADABLE.findall(sample))
    return unreadable > 0.1 * len(sample)


def _parse_tex(page: ParsedPage, body: bytes, content_type: str | None, extract_links_from_text: bool) -> None:
    """Combine's internal TeX parser: title, section headings, prose; URLs from ``\\url`` and ``\\href`` too."""
    source, page.charset = decode_body(body, content_type)
    document = parse_tex(source)
    page.title, page.headings, page.text = document.title, document.headings, document.text
    if extract_links_from_text:
        page.links = _text_links(source, set())


def _parse_image(page: ParsedPage, body: bytes, headers: Mapping[str, str]) -> None:
    """An image's record: format, dimensions and embedded text (title, description, comment) as meta.

    A HEAD-only fetch has no body; its record keeps what the headers say.
    """
    info = image_info(body) if body else None
    if info is None:
        if body:
            _fail(page, "image", "not an image Pillow can read")
        elif headers.get("content-length"):
            page.meta["image-bytes"] = [headers["content-length"]]
        return
    page.meta.update({
        "image-format": [info.format], "image-width": [str(info.width)], "image-height": [str(info.height)],
        "image-mode": [info.mode], "image-bytes": [str(len(body))],
    })
    for key, value in info.text.items():
        page.meta.setdefault(key, []).append(_clean(value))
    page.title = _clean(info.text.get("title", ""))
    page.text = "\n".join(_clean(value) for key, value in info.text.items() if key in ("description", "comment"))


def _parse_converted(
    page: ParsedPage, body: bytes, converters: Mapping[str, tuple[Converter, ...]], limits: Limits, extract_links_from_text: bool
) -> None:
    """Run the type's converters; the first output is parsed as HTML or text. A failure is logged, never raised."""
    page.conversions = convert_document(body, page.mime_type, converters, limits)
    for conversion in page.conversions:
        if not conversion.ok:
            logger.warning(
                "converter %s for %s (%s) %s: %s",
                conversion.converter.program, page.url, page.mime_type, conversion.failure, conversion.detail,
            )
    if not page.conversions or not page.conversions[-1].ok:
        page.failure = "convert"  # logged above, one line a converter
        return
    output = page.conversions[-1].output
    if page.conversions[-1].is_html:
        html, _ = decode_body(output, None, html=True)
        _parse_html(page, html, extract_links_from_text)
        page.html = page.main_text = None  # the original document is not HTML; the converter's HTML is no copy of it
    else:
        text, _ = decode_body(output, "text/plain; charset=utf-8")
        _parse_text(page, text, extract_links_from_text)


def guess_mime_type(url: str, body: bytes, content_type: str | None) -> str:
    """The declared type, or when the server gave none or a generic one: magic bytes, the URL's extension, HTML."""
    declared = mime_type_of(content_type)
    if declared not in _UNKNOWN_TYPES:
        return declared
    for magic, mime_type in _MAGIC:
        if body.startswith(magic):
            return mime_type
    guessed, _ = mimetypes.guess_type(urlsplit(url).path)
    if guessed:
        return guessed
    if body.lstrip()[:1] == b"<":
        return "text/html"
    return declared or "application/octet-stream"


def parse_document(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    extract_links_from_text: bool = True,
    converters: Mapping[str, tuple[Converter, ...]] = DEFAULT_CONVERTERS,
    limits: Limits = Limits(),
) -> ParsedPage:
    """Parse a response body; ``headers`` has lower-case names.

    The job's converters come first (a user's mapping wins over the internal
    parsers), then the internal HTML, TeX, image and text parsers; a type
    with neither gives a page without text. A document that cannot be read
    gives a page whose ``failure`` says why (and a log line); nothing is raised.
    """
    content_type = headers.get("content-type")
    mime_type = guess_mime_type(url, body, content_type)
    page = ParsedPage(
        url=url,
        mime_type=mime_type,
        modified=_http_date(headers.get("last-modified")),
        expires=_http_date(headers.get("expires")),
        server=headers.get("server", ""),
    )
    if mime_type in converters:
        if body:
            _parse_converted(page, body, converters, limits, extract_links_from_text)
        elif headers.get("content-length", "").strip() in ("", "0"):  # not a HEAD-only fetch of a sized document
            _fail(page, "empty", "no body")
    elif mime_type in HTML_TYPES:
        html = _decode(page, body, content_type, html=True)
        if _looks_binary(html):
            page.html = html
            _fail(page, "binary", f"{len(body)} bytes that are no text in {page.charset}")
        else:
            _parse_html(page, html, extract_links_from_text)
    elif mime_type in TEX_TYPES:
        _parse_tex(page, body, content_type, extract_links_from_text)
    elif mime_type.startswith("image/"):
        _parse_image(page, body, headers)
    elif mime_type in TEXT_TYPES or mime_type.startswith("text/"):
        text = _decode(page, body, content_type)
        if _looks_binary(text):
            _fail(page, "binary", f"{len(body)} bytes that are no text in {page.charset}")
        else:
            _parse_text(page, text, extract_links_from_text)
    elif body:
        _fail(page, "unsupported", f"{len(body)} bytes of a type no parser or converter reads: the page has no text")
    elif headers.get("content-length", "").strip() in ("", "0"):
        _fail(page, "empty", "no body")
    _apply_robots(page, headers.get("x-robots-tag", ""))
    return page
