"""Sitemaps as a link source: the ``Sitemap:`` lines of robots.txt, and ``/sitemap.xml`` when the job asks.

With ``Sitemaps = 1`` each robots.txt the crawl reads is searched for
``Sitemap:`` lines (Scrapy's ``sitemap_urls_from_robots``); with
``SitemapGuess = 1`` a host whose robots.txt names none (or has none) is asked
for ``/sitemap.xml``, when its robots.txt allows that. Each sitemap is read
with Scrapy's streaming :class:`scrapy.utils.sitemap.Sitemap` (no entities,
no network), after gunzipping a ``.gz`` one; a sitemap index leads to the
sitemaps it lists; a plain-text sitemap is one URL a line. The page URLs go
through :meth:`CrawlContext.mark <combine_scrapy.context.CrawlContext.mark>`, the way of
every link (canonicalized, the job's rules, non-public addresses refused,
``maxUrlsPerHost``), with priority 0.

Bounded like every other input, per host each time its robots.txt is read:
``SitemapMaxFiles`` sitemap files, ``SitemapMaxUrls`` page URLs, and
``SitemapMaxSize`` bytes a file, downloaded and again after gunzip. A page the
crawl already stored whose ``<lastmod>`` is later than the record's last check
is marked again at once: the site says it changed since.

Sitemap requests are not pages: they wait their host's turn like a robots.txt
(HostPacingMiddleware) and pass the address guard, but the job's URL rules
(which refuse ``.gz`` and ``?``) do not apply to them.

This module reads sitemaps; the extension that fetches them in the crawl is
:class:`combine_scrapy.extensions.sitemaps.SitemapReader`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urljoin, urlsplit

from lxml import etree
from scrapy.utils._compression import _DecompressionMaxSizeExceeded
from scrapy.utils.gz import gunzip
from scrapy.utils.sitemap import Sitemap, sitemap_urls_from_robots

from combine_scrapy.access.urls import WEB_SCHEMES

GUESSED_PATH = "/sitemap.xml"
_GZIP_MAGIC = b"\x1f\x8b"


class SitemapError(ValueError):
    """A sitemap that cannot be read; ``reason`` is its stats key (``sitemaps/<reason>``)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class SitemapLimits:
    max_files: int = 50
    max_urls: int = 50_000
    max_bytes: int = 50 * 1024 * 1024  # the protocol's bound on an uncompressed sitemap


@dataclass
class SitemapContent:
    """What one sitemap lists: page URLs with their ``lastmod`` (Unix time or None), and nested sitemaps."""

    pages: list[tuple[str, float | None]] = field(default_factory=list)
    sitemaps: list[str] = field(default_factory=list)
    cut: bool = False  # it listed more pages than were asked for


def sitemaps_in_robots(body: bytes | None, robots_url: str) -> list[str]:
    """The http(s) sitemap URLs a robots.txt names, in order, once each."""
    if not body:
        return []
    found = (url for url in sitemap_urls_from_robots(body, base_url=robots_url) if urlsplit(url).scheme in WEB_SCHEMES)
    return list(dict.fromkeys(found))


def parse_lastmod(text: str | None) -> float | None:
    """A W3C datetime (``2026-01-31``, ``2026-01-31T10:00:00+01:00``, ``...Z``) as a Unix time; None if unreadable."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def decompressed(body: bytes, max_bytes: int) -> bytes:
    """The sitemap's bytes, gunzipped when they are gzip, never more than ``max_bytes``."""
    if not body.startswith(_GZIP_MAGIC):
        return body
    try:
        return gunzip(body, max_size=max_bytes)
    except _DecompressionMaxSizeExceeded:
        raise SitemapError("limit/size", f"inflates past {max_bytes} bytes") from None
    except (OSError, EOFError) as e:
        raise SitemapError("unreadable", f"not gzip as it seemed: {e}") from None


def parse_sitemap(body: bytes, url: str, max_pages: int) -> SitemapContent:
    """Page URLs (at most ``max_pages``) and nested sitemaps of an XML or plain-text sitemap.

    Relative locations are resolved against ``url``; only http(s) ones are kept.
    """
    content = SitemapContent()
    if not body.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<"):
        for line in body.decode("utf-8", "replace").splitlines():
            line = line.strip()
            if urlsplit(line).scheme in WEB_SCHEMES:
                if len(content.pages) == max_pages:
                    content.cut = True
                    break
                content.pages.append((line, None))
        return content
    try:
        sitemap = Sitemap(body)
        kind = sitemap.type
        for entry in sitemap:
            location = urljoin(url, entry["loc"])
            if urlsplit(location).scheme not in WEB_SCHEMES:
                continue
            if kind == "sitemapindex":
                content.sitemaps.append(location)
            elif kind == "urlset":
                if len(content.pages) == max_pages:
                    content.cut = True
                    break
                content.pages.append((location, parse_lastmod(entry.get("lastmod"))))
    except (etree.LxmlError, StopIteration) as e:
        raise SitemapError("unreadable", f"not a sitemap: {e or 'no XML'}") from None
    if kind not in ("urlset", "sitemapindex"):
        raise SitemapError("unreadable", f"not a sitemap: root element <{kind}>")
    return content
