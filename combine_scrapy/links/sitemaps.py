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
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Self
from urllib.parse import urljoin, urlsplit

from lxml import etree
from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.utils._compression import _DecompressionMaxSizeExceeded
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.gz import gunzip
from scrapy.utils.sitemap import Sitemap, sitemap_urls_from_robots
from twisted.internet.defer import Deferred

from combine_scrapy.access.robots import RobotsPolicy
from combine_scrapy.access.urls import WEB_SCHEMES, check_url, host_of
from combine_scrapy.context import CrawlComponent
from combine_scrapy.middlewares import ROBOTS_FETCHED
from combine_scrapy.siderequests import side_request

logger = logging.getLogger(__name__)

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


class SitemapReader(CrawlComponent):
    """Reads the sitemaps of each host whose robots.txt the crawl reads, and marks the pages they list.

    A Scrapy extension: RobotsMiddleware sends ``ROBOTS_FETCHED`` with each
    robots.txt answer it reads from the network; the host's sitemaps are then
    read in the background, one request at a time, each in its host's turn.
    """

    DOWNLOAD_PRIORITY = 900  # after robots.txt, before pages

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._reading: set[Deferred[None]] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        reader = super().from_crawler(crawler)
        crawler.signals.connect(reader.robots_fetched, signal=ROBOTS_FETCHED)
        crawler.signals.connect(reader.spider_closed, signal=signals.spider_closed)
        return reader

    def robots_fetched(self, page_url: str, status: int | None, body: bytes | None, policy: RobotsPolicy) -> None:
        job = self.context.job
        if not (job.sitemaps.from_robots or job.sitemaps.guess):
            return
        parts = urlsplit(page_url)
        origin = f"{parts.scheme}://{parts.netloc}"
        named = sitemaps_in_robots(body, f"{origin}/robots.txt") if job.sitemaps.from_robots and status and 200 <= status < 300 else []
        if not named and job.sitemaps.guess:
            guess = origin + GUESSED_PATH
            if policy.allowed(guess):
                named = [guess]
            else:
                self.stats.inc_value("sitemaps/robots_disallowed")
        if named:
            limits = SitemapLimits(job.sitemaps.max_files, job.sitemaps.max_urls, job.sitemaps.max_size)
            reading = deferred_from_coro(self._read_host(host_of(page_url), named, limits))
            self._reading.add(reading)
            reading.addBoth(lambda _: self._reading.discard(reading))

    def spider_closed(self, spider: Spider) -> None:
        for reading in list(self._reading):
            reading.cancel()

    async def _read_host(self, host: str, first: list[str], limits: SitemapLimits) -> None:
        queue, seen = deque(first), set(first)
        files = taken = 0
        dated: list[tuple[str, float]] = []
        while queue:
            url = queue.popleft()
            if files == limits.max_files:
                self._limit(host, "files", f"{len(queue) + 1} sitemaps left unread after {files}")
                break
            files += 1
            content = await self._read(url, limits, limits.max_urls - taken)
            if content is None:
                continue
            for nested in content.sitemaps:
                if nested not in seen:
                    seen.add(nested)
                    queue.append(nested)
            taken += len(content.pages)
            self._mark(content.pages)
            dated.extend((page, lastmod) for page, lastmod in content.pages if lastmod is not None)
            if content.cut or (taken == limits.max_urls and queue):
                self._limit(host, "urls", f"stopped at {limits.max_urls} URLs (in {url})")
                break
        if dated:
            self._revisit_changed(dated)

    async def _read(self, url: str, limits: SitemapLimits, room: int) -> SitemapContent | None:
        """One sitemap's content, or None (counted and logged) when it cannot be had or read."""
        self.stats.inc_value("sitemaps/requests")
        request = side_request(url, self.DOWNLOAD_PRIORITY, self.context.job.fetching.timeout, download_maxsize=limits.max_bytes)
        try:
            response = await self.crawler.engine.download_async(request)
        except Exception as e:  # unreachable, refused by the address guard, over the size bound: never fatal
            self.stats.inc_value("sitemaps/failed")
            logger.info("sitemap %s not read: %s", url, e or type(e).__name__)
            return None
        if response.status != 200:
            self.stats.inc_value(f"sitemaps/status/{response.status}")
            logger.info("sitemap %s not read: HTTP %d", url, response.status)
            return None
        try:
            content = parse_sitemap(decompressed(response.body, limits.max_bytes), url, room)
        except SitemapError as e:
            self.stats.inc_value(f"sitemaps/{e.reason}")
            logger.warning("sitemap %s not read: %s", url, e)
            return None
        self.stats.inc_value("sitemaps/read")
        return content

    def _mark(self, pages: list[tuple[str, float | None]]) -> None:
        if not pages:
            return
        self.stats.inc_value("sitemaps/urls", len(pages))
        marked, rejected = self.context.mark((url, 0.0) for url, _ in pages)
        self.stats.inc_value("sitemaps/marked", marked)
        self.stats.inc_value("frontier/marked", marked)
        for reason, count in rejected.items():
            self.stats.inc_value(f"urls/rejected/{reason}", count)

    def _revisit_changed(self, dated: list[tuple[str, float]]) -> None:
        """Mark again the stored pages whose lastmod is later than their record's last check."""
        context = self.context
        canonical: dict[str, float] = {}
        for url, lastmod in dated:
            verdict = check_url(url, context.job.url_rules)
            if verdict.ok:
                canonical[verdict.url] = max(lastmod, canonical.get(verdict.url, lastmod))
        fetched = [url for url, status in context.frontier.statuses(canonical).items() if status == 200]
        for url in fetched:
            key = context.store.key_for_url(url)
            record = context.store.get(key) if key else None
            if record is not None and canonical[url] > record.checked and context.frontier.remark(url):
                self.stats.inc_value("sitemaps/revisits")
                logger.info("sitemap: %s changed since it was checked (lastmod): marked again", url)

    def _limit(self, host: str, limit: str, detail: str) -> None:
        self.stats.inc_value(f"sitemaps/limit/{limit}")
        logger.warning("sitemaps of %s: limit %s reached: %s", host, limit, detail)
